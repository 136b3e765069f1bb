// Task keys: strings, numbers, or tuple arrays such as ["x", 0, 1] that compare by value.

/** One element of a tuple key. */
export type KeyPart = string | number | readonly KeyPart[];
/** A graph key: a string, a number, or a tuple key such as `["x", 0, 1]`. */
export type Key = string | number | readonly KeyPart[];

/**
 * A string that identifies a key by value: a string key is its own id, so the common case
 * costs nothing; numbers and tuples get a prefix no ordinary string key starts with.
 */
export function keyId(key: Key): string {
  if (typeof key === "string") return key.charCodeAt(0) === 0 ? "\u0000s" + key : key;
  if (typeof key === "number") return "\u0000n" + String(key);
  return "\u0000t" + JSON.stringify(key);
}

/** The key `keyId` made `id` from. */
export function keyFromId(id: string): Key {
  if (id.charCodeAt(0) !== 0) return id;
  const body = id.slice(2);
  switch (id[1]) {
    case "s":
      return body;
    case "n":
      return Number(body);
    case "t":
      return JSON.parse(body) as Key;
    default:
      throw new Error(`Not a key id: ${JSON.stringify(id)}`);
  }
}

/** True for a value that can be a key: a string, a finite number, or a tuple of those. */
export function isKey(value: unknown): value is Key {
  if (typeof value === "string") return true;
  if (typeof value === "number") return Number.isFinite(value);
  if (!Array.isArray(value) || value.length === 0) return false;
  return value.every(isKey);
}

/** Dask's repr of a key: `'x'` for strings, `('x', 0, 1)` for tuples. */
export function formatKey(key: Key): string {
  if (typeof key === "string") {
    // Most keys need no escaping: skip the two replacements then.
    if (key.indexOf("\\") < 0 && key.indexOf("'") < 0) return `'${key}'`;
    return `'${key.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;
  }
  if (typeof key === "number") return String(key);
  // Built by appending (no list of parts to join): every tuple key of a graph is named once.
  if (key.length === 0) return "()";
  if (key.length === 1) return `(${formatKey(key[0])},)`;
  let text = "(" + formatKey(key[0]);
  for (let i = 1; i < key.length; i++) text += ", " + formatKey(key[i]);
  return text + ")";
}

/**
 * Python's `str(key)`, the text Dask's records carry for a key: a string key is itself
 * (`len-0`), so it equals the Future's key; a number or tuple key is its repr (`('x', 0)`).
 */
export function keyStr(key: Key): string {
  return typeof key === "string" ? key : formatKey(key);
}

/**
 * `keyStr` of the key whose `keyId` is `id` and whose repr (`formatKey`) is `repr`, without
 * parsing the id back: a string key is its id (unescaped); a number's or tuple's str is its repr.
 * (The cluster scheduler names every finished task so, and already holds both.)
 */
export function keyStrOfId(id: string, repr: string): string {
  if (id.charCodeAt(0) !== 0) return id;
  return id[1] === "s" ? id.slice(2) : repr;
}

const eightHexDigits = /^[0-9a-f]{8}$/;
const letters = /^[A-Za-z]+$/;
const md5Like = /^[a-f0-9]{32}$/;

/**
 * The group a key belongs to, like Dask's `key_split`: `"add-3f2a9c…"` → `"add"`,
 * `["tsqr-ab12…_QR_st1", 3, 0]` → `"tsqr"`, `"hello-world-1"` → `"hello-world"`.
 * Diagnostics colour and count tasks by it.
 */
export function keyPrefix(key: Key): string {
  let head: KeyPart = key;
  while (Array.isArray(head)) {
    if (head.length === 0) return "Other";
    head = head[0];
  }
  if (typeof head === "number") return String(head);
  const words = (head as string).split("-");
  let prefix = words[0];
  if (prefix.length > 0 && !/^[A-Za-z]/.test(prefix)) prefix = prefix.split(",")[0].replace(/^[_'()"]+|[_'()"]+$/g, "");
  // Later words belong to the name while they are plain words, not a token or a counter.
  for (let i = 1; i < words.length; i++) {
    if (!letters.test(words[i]) || eightHexDigits.test(words[i])) break;
    prefix += "-" + words[i];
  }
  if (md5Like.test(prefix)) return "data";
  return prefix.length > 0 ? prefix : "Other";
}

/**
 * keyPrefix for many keys, cached: key_split costs ~0.5–2 µs a key, which matters at a million.
 * keyPrefix keeps a string's leading words while they are plain letters (and not an 8-hex-digit
 * token), so keys that agree up to the first other word (`sum-3-17`, `sum-3-18` → `sum-`) are in
 * the same group; that head is found with a scan and its group worked out once. Tuple keys go by
 * their first element. The cache lives as long as the returned function and stays bounded.
 */
export function keyPrefixer(): (key: Key) => string {
  const byHead = new Map<string, string>();
  // The last heads seen, most recent first: keys come in runs of a few groups, and checking that a
  // key starts with a known head costs neither an allocation nor a hash.
  const recent: { head: string; group: string }[] = [];
  const ofString = (text: string): string => {
    for (const { head, group } of recent) {
      const after = head.length;
      if (text.length > after && text.charCodeAt(after) === 45 /* - */ && text.startsWith(head)) {
        const next = text.indexOf("-", after + 1);
        if (!isPlainWord(text, after + 1, next < 0 ? text.length : next)) return group;
      }
    }
    let end = text.indexOf("-");
    while (end >= 0) {
      const next = text.indexOf("-", end + 1);
      if (!isPlainWord(text, end + 1, next < 0 ? text.length : next)) break;
      end = next;
    }
    const head = end < 0 ? text : text.slice(0, end);
    let group = byHead.get(head);
    if (group === undefined) {
      group = keyPrefix(head);
      // Keys without a separable token (bare hashes) would each add an entry: stop caching then.
      if (byHead.size < MAX_CACHED_HEADS) byHead.set(head, group);
    }
    if (end >= 0) {
      recent.unshift({ head, group });
      if (recent.length > RECENT_HEADS) recent.pop();
    }
    return group;
  };
  return (key) => {
    if (typeof key === "string") return ofString(key);
    if (Array.isArray(key) && typeof key[0] === "string") return ofString(key[0]);
    return keyPrefix(key);
  };
}

const MAX_CACHED_HEADS = 10_000;
const RECENT_HEADS = 4;

/** The word text[start, end) is one keyPrefix keeps: letters only, and not 8 hex digits (a token). */
function isPlainWord(text: string, start: number, end: number): boolean {
  if (end <= start) return false;
  let hex = end - start === 8;
  for (let i = start; i < end; i++) {
    const code = text.charCodeAt(i);
    const lower = code >= 97 && code <= 122;
    if (!lower && !(code >= 65 && code <= 90)) return false;
    if (!lower || code > 102) hex = false; // tokens are lower-case hex
  }
  return !hex;
}

/**
 * A total order over keys for deterministic tie-breaks (Dask sorts by type name, then value):
 * numbers before strings before tuples; tuples element-wise.
 */
export function compareKeys(a: Key, b: Key): number {
  const rankA = typeof a === "number" ? 0 : typeof a === "string" ? 1 : 2;
  const rankB = typeof b === "number" ? 0 : typeof b === "string" ? 1 : 2;
  if (rankA !== rankB) return rankA - rankB;
  if (rankA === 0) return (a as number) - (b as number);
  if (rankA === 1) return a < b ? -1 : a > b ? 1 : 0;
  const tupleA = a as readonly KeyPart[];
  const tupleB = b as readonly KeyPart[];
  const shared = Math.min(tupleA.length, tupleB.length);
  for (let i = 0; i < shared; i++) {
    const order = compareKeys(tupleA[i], tupleB[i]);
    if (order !== 0) return order;
  }
  return tupleA.length - tupleB.length;
}
