// UnreachableAddresses (src/kernel/distributed/redis/unreachable): an address not reached is
// tried again in the background until it answers, then it is reachable again; a dead one is left
// alone after a bounded number of tries; closing stops every try. Real timers, a few ms apart.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { UnreachableAddresses } from "../../src/kernel/distributed/redis/unreachable";
import { waitFor } from "../helpers/wait";

const INTERVAL_MS = 5;

describe("UnreachableAddresses", () => {
  test("an address is unreachable until a try reaches it; then it is reachable and said so once", async () => {
    const answered: string[] = [];
    const unreachable = new UnreachableAddresses((address) => answered.push(address), INTERVAL_MS, 100);
    let tries = 0;
    unreachable.add("tcp://a:1", async () => {
      if (++tries < 3) throw new Error("no answer");
    });
    unreachable.add("tcp://a:1", async () => assert.fail("the address is already being tried"));
    assert.equal(unreachable.has("tcp://a:1"), true);
    assert.equal(unreachable.has("tcp://b:1"), false);
    await waitFor("a to answer", () => answered.length > 0, 5);
    assert.equal(tries, 3);
    assert.deepEqual(answered, ["tcp://a:1"]);
    assert.equal(unreachable.has("tcp://a:1"), false);
    unreachable.close();
  });

  test("an address that never answers is left alone after the last try: the next fetch tries it itself", async () => {
    const unreachable = new UnreachableAddresses(() => assert.fail("never answers"), INTERVAL_MS, 4);
    let tries = 0;
    unreachable.add("tcp://dead:1", async () => {
      tries++;
      throw new Error("refused");
    });
    await waitFor("the tries to end", () => !unreachable.has("tcp://dead:1"), 5);
    assert.equal(tries, 4);
    unreachable.close();
  });

  test("closed, it tries nothing more and a try under way changes nothing", async () => {
    const unreachable = new UnreachableAddresses(() => assert.fail("closed"), INTERVAL_MS, 100);
    let release!: () => void;
    let tries = 0;
    unreachable.add("tcp://slow:1", () => {
      tries++;
      return new Promise<void>((resolve) => (release = resolve));
    });
    await waitFor("a try to start", () => tries === 1, 5);
    unreachable.close();
    release();
    await new Promise((resolve) => setTimeout(resolve, 10 * INTERVAL_MS));
    assert.equal(tries, 1);
    assert.equal(unreachable.has("tcp://slow:1"), false);
    unreachable.add("tcp://later:1", async () => assert.fail("closed"));
    assert.equal(unreachable.has("tcp://later:1"), false);
  });
});
