// The plugin runtime: a bump allocator whose heap is rewound at the start of every call.
// Plugins are pure functions, so nothing allocated during a call outlives it; rewinding
// reuses the same (already touched, cached) pages instead of faulting in fresh ones, which
// measured ~3x faster than a never-freeing bump heap and keeps linear memory flat.
// Everything the start function allocated (module-level constants) lies below the mark.
// Selected by the SDK's asconfig.json (`runtime`), which every plugin project extends.
import { AL_MASK, OBJECT, OBJECT_OVERHEAD, BLOCK_MAXSIZE, BLOCK_OVERHEAD, BLOCK, OBJECT_MAXSIZE } from "~lib/rt/common";

// @ts-ignore: decorator
@lazy let top: usize = ((__heap_base + BLOCK_OVERHEAD + AL_MASK) & ~AL_MASK) - BLOCK_OVERHEAD;
// @ts-ignore: decorator
@lazy let mark: usize = 0;

// Known linear-memory size: memory.size is a runtime call in some engines, too slow per allocation.
// @ts-ignore: decorator
@lazy let capacity: usize = 0;

@inline function reserve(end: usize): void {
  if (end > capacity) grow(end);
}

function grow(end: usize): void {
  let have = (<usize>memory.size()) << 16;
  if (end > have) {
    const need = <i32>((end - have + 0xffff) >>> 16);
    // Grow by at least the current size: few grow calls while a plugin warms up.
    if (memory.grow(max(memory.size(), need)) < 0 && memory.grow(need) < 0) unreachable();
    have = (<usize>memory.size()) << 16;
  }
  capacity = have;
}

@inline function rounded(size: usize): usize {
  return ((size + BLOCK_OVERHEAD + AL_MASK) & ~AL_MASK) - BLOCK_OVERHEAD;
}

// Where the kept region starts: the end of what the start function allocated.
// @ts-ignore: decorator
@lazy let base: usize = 0;

/** Called by the SDK when a call begins: the first time it sets the mark, then it rewinds to it. */
// @ts-ignore: decorator
@global @unsafe
export function __arena_rewind(): void {
  if (mark == 0) { mark = top; base = top; } else top = mark;
}

/**
 * Frees everything, kept region included (down to what the start function allocated), and
 * lets the caller allocate data that must outlive calls (the decoded context); it then calls
 * __arena_keep so that later rewinds stop above that data.
 */
// @ts-ignore: decorator
@global @unsafe
export function __arena_restart(): void {
  if (mark == 0) base = top;
  top = base;
  mark = base;
}

// @ts-ignore: decorator
@global @unsafe
export function __arena_keep(): void {
  mark = top;
}

// @ts-ignore: decorator
@global @unsafe
export function __alloc(size: usize): usize {
  if (size > BLOCK_MAXSIZE) unreachable();
  const block = changetype<BLOCK>(top);
  const ptr = top + BLOCK_OVERHEAD;
  const payload = rounded(size);
  reserve(ptr + payload);
  top = ptr + payload;
  block.mmInfo = payload;
  return ptr;
}

// @ts-ignore: decorator
@global @unsafe
export function __realloc(ptr: usize, size: usize): usize {
  const block = changetype<BLOCK>(ptr - BLOCK_OVERHEAD);
  const have = block.mmInfo;
  if (size <= have) return ptr;
  const payload = rounded(size);
  if (ptr + have == top) { // the last block grows in place
    reserve(ptr + payload);
    top = ptr + payload;
    block.mmInfo = payload;
    return ptr;
  }
  const next = __alloc(max<usize>(payload, have << 1));
  memory.copy(next, ptr, have);
  return next;
}

// @ts-ignore: decorator
@global @unsafe
export function __free(ptr: usize): void {
  const block = changetype<BLOCK>(ptr - BLOCK_OVERHEAD);
  if (ptr + block.mmInfo == top) top = changetype<usize>(block);
}

// @ts-ignore: decorator
@global @unsafe
export function __new(size: usize, id: u32): usize {
  if (size > OBJECT_MAXSIZE) unreachable();
  const ptr = __alloc(OBJECT_OVERHEAD + size);
  const obj = changetype<OBJECT>(ptr - BLOCK_OVERHEAD);
  obj.gcInfo = 0;
  obj.gcInfo2 = 0;
  obj.rtId = id;
  obj.rtSize = <u32>size;
  return ptr + OBJECT_OVERHEAD;
}

// @ts-ignore: decorator
@global @unsafe
export function __renew(oldPtr: usize, size: usize): usize {
  if (size > OBJECT_MAXSIZE) unreachable();
  const ptr = __realloc(oldPtr - OBJECT_OVERHEAD, OBJECT_OVERHEAD + size);
  changetype<OBJECT>(ptr - BLOCK_OVERHEAD).rtSize = <u32>size;
  return ptr + OBJECT_OVERHEAD;
}

// No collector: these are the hooks the compiler emits calls to.
// @ts-ignore: decorator
@global @unsafe
export function __link(parentPtr: usize, childPtr: usize, expectMultiple: bool): void {}
// @ts-ignore: decorator
@global @unsafe
export function __pin(ptr: usize): usize { return ptr; }
// @ts-ignore: decorator
@global @unsafe
export function __unpin(ptr: usize): void {}
// @ts-ignore: decorator
@global @unsafe
function __visit(ptr: usize, cookie: u32): void {}
// @ts-ignore: decorator
@global @unsafe
export function __collect(): void {}
