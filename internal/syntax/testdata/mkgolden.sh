#!/bin/bash
# Regenerates the golden .p1 files with the real stap (-p1 against the oracle kernel tree).
cd "$(dirname "$0")/p1"
for f in *.stp; do
  b=${f%.stp}
  opts=""; args=()
  if grep -q '^#! guru' $f; then opts="-g"; fi
  if a=$(grep '^#! args:' $f); then read -ra args <<< "${a#\#! args: }"; fi
  stap -r /var/tmp/stap-oracle/kernel-tree -p1 $opts $f "${args[@]}" > $b.p1 2> $b.err
  rc=$?
  if [ $rc != 0 ]; then echo "FAIL $b"; grep -v 'WARNING\|Tip' $b.err | head -5; rm $b.p1; fi
  rm -f $b.err
done
