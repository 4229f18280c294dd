"""int8_weights_quality.py SMOLLM2.json GEMMA3.json [NOTE]: the quality table of int8 attention
weights (values qbits=8) from two `veloxquant ppl --json` outputs (the command below, run at the
checkout's HEAD), written to figures/bench/int8-weights-quality.txt; NOTE (optional) is added to
the header."""
import json
import subprocess
import sys

head = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()
cmd = ('./build/veloxquant ppl --model MODEL --file ../shared/data/wikitext-2-test.txt --ctx 2048 --chunks 3 --skip 0.25 --json '
       '--cache "keys=kivi:bits=2,qbits=8 values=kivi:bits=2 residual=128" --cache "keys=kivi:bits=2,qbits=8 values=kivi:bits=2,qbits=8 residual=128" '
       '--cache "keys=kivi:bits=4 values=kivi:bits=4 residual=128" --cache "keys=kivi:bits=4 values=kivi:bits=4,qbits=8 residual=128" '
       '--cache "keys=q4_0:rot=1,qbits=8 values=q4_0:rot=1" --cache "keys=q4_0:rot=1,qbits=8 values=q4_0:rot=1,qbits=8" '
       '--cache "keys=q8_0:qbits=8 values=q8_0" --cache "keys=q8_0:qbits=8 values=q8_0:qbits=8"')
out = ['# int8 attention weights for values (qbits=8 on the value codec) against float weights: quality',
       '# command (MODEL = smollm2-135m, then gemma3-270m; quality numbers do not depend on load), at commit %s:' % head,
       '#   ' + cmd,
       '# generated from the two --json outputs by: python3 scripts/int8_weights_quality.py SMOLLM2.json GEMMA3.json']
if len(sys.argv) > 3:
    out.append('# ' + sys.argv[3])
out.append('')
for i, m in enumerate(['smollm2-135m', 'gemma3-270m']):
    d = json.load(open(sys.argv[1 + i]))
    out.append('%s: fp16-cache ppl %.4f over %d positions (%d chunks of %d)' % (m, d['ppl'], d['configs'][0]['positions'], d['chunks'], d['ctx']))
    out.append('| cache | ppl | dPPL | KL vs fp16 | top-1 | b/e |')
    out.append('|---|---|---|---|---|---|')
    for c in d['configs']:
        out.append('| `%s` | %.4f | %+.4f | %.3e | %.4f | %.3f |' % (c['cache'], c['ppl'], c['dppl'], c['kl'], c['top1'], c['bits_per_element']))
    out.append('')
open('figures/bench/int8-weights-quality.txt', 'w').write('\n'.join(out))
