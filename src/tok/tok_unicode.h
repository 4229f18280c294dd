/* tok_unicode.h -- the Unicode facts the tokenizers need: UTF-8 decoding,
 * coarse code point classes for the pre-tokenizer regexes (\p{L}, \p{N},
 * \p{P}, \s), and GPT-2's byte <-> unicode map for byte-level BPE.
 *
 * Classes come from a generated range table (tok_unicode_table.c, Unicode
 * general categories). Whitespace is the Unicode White_Space property, the
 * set llama.cpp's pre-tokenizers treat as \s. */
#ifndef VQ_MODEL_TOK_UNICODE_H
#define VQ_MODEL_TOK_UNICODE_H

#include <stddef.h>
#include <stdint.h>

/* Class bits of one code point. Every code point (and every invalid byte,
 * see vq_tok_utf8_next) has at least one bit set. */
enum {
    VQ_TOK_CP_LETTER = 1, /* \p{L} */
    VQ_TOK_CP_NUMBER = 2, /* \p{N} */
    VQ_TOK_CP_SPACE = 4,  /* \s (White_Space) */
    VQ_TOK_CP_PUNCT = 8,  /* \p{P} */
    VQ_TOK_CP_OTHER = 16  /* anything else: symbols, marks, controls, invalid */
};

/* Marks an invalid UTF-8 byte returned by vq_tok_utf8_next. */
#define VQ_TOK_CP_INVALID 0xFFFFFFFFu

typedef struct {
    uint32_t first, last; /* inclusive */
    uint8_t cls;          /* 1 letter, 2 number, 3 punctuation */
} vq_tok_urange;

extern const vq_tok_urange vq_tok_urange_table[];
extern const size_t vq_tok_urange_count;

/* Class bits of code point cp (VQ_TOK_CP_INVALID gives VQ_TOK_CP_OTHER). */
uint8_t vq_tok_cp_class(uint32_t cp);

/* Decode one code point at s[0..len) (len >= 1), strictly: overlong forms,
 * surrogates, values above U+10FFFF and truncated sequences are invalid.
 * An invalid sequence consumes one byte and gives VQ_TOK_CP_INVALID, so
 * every byte of the input belongs to exactly one unit. Returns the bytes
 * consumed (1..4). */
size_t vq_tok_utf8_next(const char *s, size_t len, uint32_t *cp);

/* Encode cp as UTF-8 into out[4]; returns the byte count (0 if cp is not a
 * valid scalar value). */
size_t vq_tok_utf8_put(uint32_t cp, char out[4]);

/* GPT-2's bijection between the 256 byte values and 256 printable code
 * points: printable Latin-1 bytes map to themselves, the rest to U+0100...
 * vq_tok_byte_to_cp(b) is the code point; vq_tok_cp_to_byte(cp) is the byte
 * or -1 if cp is not in the image of the map. */
uint32_t vq_tok_byte_to_cp(uint8_t b);
int vq_tok_cp_to_byte(uint32_t cp);

#endif
