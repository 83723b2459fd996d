import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { byteBudget } from '../../../src/shared/byte-budget.js';

const settled = async <T>(p: Promise<T>): Promise<boolean> => {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((r) => setImmediate(r));
  return done;
};

describe('byteBudget', () => {
  it('at, under and over the budget: what fits is taken at once, what does not waits for room', async () => {
    const budget = byteBudget(100);
    const a = await budget.take(60);
    const b = await budget.take(40); // exactly the budget
    assert.equal(budget.held(), 100);
    const c = budget.take(1); // a byte over
    assert.equal(await settled(c), false);
    assert.equal(budget.waiting(), 1);
    a();
    const giveC = await c;
    assert.equal(budget.held(), 41);
    b();
    giveC();
    assert.equal(budget.held(), 0);
  });

  it('pieces under its threshold pass without counting, even while the budget is full; from the threshold on they count', async () => {
    const budget = byteBudget(100, 10);
    const full = await budget.take(100);
    const small = budget.take(9); // a byte under the threshold
    assert.equal(await settled(small), true);
    assert.equal(budget.held(), 100);
    (await small)();
    assert.equal(budget.held(), 100, 'giving a small piece back frees nothing');
    const atThreshold = budget.take(10);
    assert.equal(await settled(atThreshold), false);
    full();
    (await atThreshold)();
    assert.equal(budget.held(), 0);
  });

  it('a piece larger than the whole budget runs alone, once nothing else is held', async () => {
    const budget = byteBudget(100);
    const small = await budget.take(10);
    const big = budget.take(250);
    assert.equal(await settled(big), false);
    small();
    const giveBig = await big;
    assert.equal(budget.held(), 250);
    const next = budget.take(1);
    assert.equal(await settled(next), false, 'nothing beside it');
    giveBig();
    (await next)();
  });

  it('in arrival order: small pieces do not overtake a large one waiting at the head', async () => {
    const budget = byteBudget(100);
    const first = await budget.take(50);
    const large = budget.take(80);
    const small = budget.take(10);
    assert.equal(await settled(small), false, 'the small one waits behind the large one though it would fit');
    first();
    const giveLarge = await large;
    const giveSmall = await small;
    assert.equal(budget.held(), 90);
    giveLarge();
    giveSmall();
  });

  it('giving back twice gives back once', async () => {
    const budget = byteBudget(100);
    const give = await budget.take(30);
    await budget.take(20);
    give();
    give();
    assert.equal(budget.held(), 20);
  });
});
