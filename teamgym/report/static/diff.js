/* teamgym inspect: a word-level diff of two texts (longest common subsequence; lines when the texts are long).
 * lcsDiff(a, b) -> [[op, text], ...] with op "=" (in both), "-" (only in a), "+" (only in b), or null when even
 * the line-level table would be too large. Joining the "=" and "-" parts gives a; the "=" and "+" parts give b. */
"use strict";
function diffTokens(text) { return text.match(/\s+|[A-Za-z0-9_]+|[^\sA-Za-z0-9_]/g) || []; }
function lcsDiff(a, b) {
  let A = diffTokens(a), B = diffTokens(b);
  if (A.length * B.length > 4e6) { A = a.split(/(?<=\n)/); B = b.split(/(?<=\n)/); }
  if (A.length * B.length > 4e6) return null;
  let pre = 0;
  while (pre < A.length && pre < B.length && A[pre] === B[pre]) pre++;
  let suf = 0;
  while (suf < A.length - pre && suf < B.length - pre && A[A.length - 1 - suf] === B[B.length - 1 - suf]) suf++;
  const a2 = A.slice(pre, A.length - suf), b2 = B.slice(pre, B.length - suf);
  const n = a2.length, m = b2.length, w = m + 1;
  const L = new Uint32Array((n + 1) * w);
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      L[i * w + j] = a2[i] === b2[j] ? L[(i + 1) * w + j + 1] + 1 : Math.max(L[(i + 1) * w + j], L[i * w + j + 1]);
    }
  }
  const ops = [["=", A.slice(0, pre).join("")]];
  let i = 0, j = 0;
  const push = (op, s) => {
    const last = ops[ops.length - 1];
    if (last[0] === op) last[1] += s; else ops.push([op, s]);
  };
  while (i < n && j < m) {
    if (a2[i] === b2[j]) { push("=", a2[i]); i++; j++; }
    else if (L[(i + 1) * w + j] >= L[i * w + j + 1]) { push("-", a2[i]); i++; }
    else { push("+", b2[j]); j++; }
  }
  while (i < n) push("-", a2[i++]);
  while (j < m) push("+", b2[j++]);
  push("=", A.slice(A.length - suf).join(""));
  return ops;
}
