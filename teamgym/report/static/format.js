/* teamgym inspect: text and number formatting shared by the page's scripts. */
"use strict";
const esc = (s) => String(s).replace(/[&<>"']/g, (ch) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;",
  '"': "&quot;", "'": "&#39;" })[ch]);
const num = (v, digits = 3) => (v === null || v === undefined) ? "–" : (Math.abs(v) >= 1000 ? v.toFixed(0) :
  Number(v.toFixed(digits)).toString());
const signed = (v) => (v === null || v === undefined) ? "–" : (v > 0 ? "+" : "") + num(v);
const fmtInt = (v) => v.toLocaleString("en-US");
function el(tag, cls, html) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (html !== undefined) node.innerHTML = html;
  return node;
}
function mixColor(a, b, t) {
  const pa = [1, 3, 5].map((k) => parseInt(a.slice(k, k + 2), 16));
  const pb = [1, 3, 5].map((k) => parseInt(b.slice(k, k + 2), 16));
  return "rgb(" + pa.map((v, k) => Math.round(v + (pb[k] - v) * t)).join(",") + ")";
}
const joinParts = (parts) => parts.filter(Boolean).join(" · ");
