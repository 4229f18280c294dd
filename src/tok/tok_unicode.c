/* tok_unicode.c -- UTF-8 decoding, code point classes, GPT-2 byte map. */
#include "tok/tok_unicode.h"

static int is_white_space(uint32_t cp)
{
    /* Unicode White_Space property */
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 ||
           cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

static uint8_t table_class(uint32_t cp)
{
    size_t lo = 0, hi = vq_tok_urange_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < vq_tok_urange_table[mid].first)
            hi = mid;
        else if (cp > vq_tok_urange_table[mid].last)
            lo = mid + 1;
        else
            return vq_tok_urange_table[mid].cls;
    }
    return 0;
}

uint8_t vq_tok_cp_class(uint32_t cp)
{
    if (cp == VQ_TOK_CP_INVALID || cp > 0x10FFFF)
        return VQ_TOK_CP_OTHER;
    if (is_white_space(cp))
        return VQ_TOK_CP_SPACE;
    switch (table_class(cp)) {
    case 1: return VQ_TOK_CP_LETTER;
    case 2: return VQ_TOK_CP_NUMBER;
    case 3: return VQ_TOK_CP_PUNCT;
    default: return VQ_TOK_CP_OTHER;
    }
}

size_t vq_tok_utf8_next(const char *s, size_t len, uint32_t *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    unsigned char b = u[0];
    size_t n;
    uint32_t c, min;
    if (b < 0x80) {
        *cp = b;
        return 1;
    } else if ((b & 0xE0) == 0xC0) {
        n = 2, c = b & 0x1Fu, min = 0x80;
    } else if ((b & 0xF0) == 0xE0) {
        n = 3, c = b & 0x0Fu, min = 0x800;
    } else if ((b & 0xF8) == 0xF0) {
        n = 4, c = b & 0x07u, min = 0x10000;
    } else {
        *cp = VQ_TOK_CP_INVALID;
        return 1;
    }
    if (n > len) {
        *cp = VQ_TOK_CP_INVALID;
        return 1;
    }
    for (size_t i = 1; i < n; i++) {
        if ((u[i] & 0xC0) != 0x80) {
            *cp = VQ_TOK_CP_INVALID;
            return 1;
        }
        c = (c << 6) | (u[i] & 0x3Fu);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) {
        *cp = VQ_TOK_CP_INVALID;
        return 1;
    }
    *cp = c;
    return n;
}

size_t vq_tok_utf8_put(uint32_t cp, char out[4])
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF)
        return 0;
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp <= 0x10FFFF) {
        out[0] = (char)(0xF0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (char)(0x80 | (cp & 0x3F));
        return 4;
    }
    return 0;
}

/* GPT-2 (openai/gpt-2 encoder.py bytes_to_unicode): bytes '!'..'~',
 * 0xA1..0xAC and 0xAE..0xFF stand for themselves; the other 68 bytes, in
 * increasing order, take U+0100, U+0101, ... */
static int byte_is_printable(unsigned b)
{
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
}

/* The 68 non-printable bytes in order: 0x00..0x20 (33), 0x7F..0xA0 (34),
 * 0xAD (1). */
uint32_t vq_tok_byte_to_cp(uint8_t b)
{
    if (byte_is_printable(b))
        return b;
    if (b <= 0x20)
        return 0x100u + b;
    if (b >= 0x7F && b <= 0xA0)
        return 0x100u + 33u + (uint32_t)(b - 0x7F);
    return 0x100u + 67u; /* 0xAD */
}

int vq_tok_cp_to_byte(uint32_t cp)
{
    if (cp < 0x100)
        return byte_is_printable(cp) ? (int)cp : -1;
    if (cp >= 0x100 + 68)
        return -1;
    uint32_t k = cp - 0x100;
    if (k < 33)
        return (int)k;
    if (k < 67)
        return (int)(0x7F + (k - 33));
    return 0xAD;
}
