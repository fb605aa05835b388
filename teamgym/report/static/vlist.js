/* teamgym inspect: a virtualised list. Only the rows in view (and a few around them) exist in the DOM, so a list
 * of any length scrolls and redraws in constant time. render(item, index) returns one row element of rowHeight px. */
"use strict";
function VirtualList(box, rowHeight, render) {
  const spacer = document.createElement("div"), layer = document.createElement("div");
  spacer.className = "vl-spacer";
  layer.className = "vl-layer";
  spacer.appendChild(layer);
  box.appendChild(spacer);
  let items = [], queued = false;
  function draw() {
    queued = false;
    const height = box.clientHeight || 800;
    const first = Math.max(0, Math.floor(box.scrollTop / rowHeight) - 8);
    const last = Math.min(items.length, Math.ceil((box.scrollTop + height) / rowHeight) + 8);
    layer.style.transform = `translateY(${first * rowHeight}px)`;
    const nodes = [];
    for (let k = first; k < last; k++) nodes.push(render(items[k], k));
    layer.replaceChildren(...nodes);
  }
  box.addEventListener("scroll", () => { if (!queued) { queued = true; requestAnimationFrame(draw); } });
  return {
    set(next) { items = next; spacer.style.height = (items.length * rowHeight) + "px"; box.scrollTop = 0; draw(); },
    draw,
    reveal(index) {
      const top = index * rowHeight;
      if (top < box.scrollTop || top > box.scrollTop + box.clientHeight - rowHeight) box.scrollTop = top;
      draw();
    },
  };
}
