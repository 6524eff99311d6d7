/**
 * Two alternative designs of the handoff machine, built from the shipped definition, to price the choices explained in
 * the header of `machines/handoff.ts`: an XState `after` for the deadline (instead of the engine's own timer and the
 * `DEADLINE` event), and the validation as an invoked promise actor (instead of the `startValidation` entry action).
 * They exist only here; the engine never uses them.
 */
import { createActor, createMachine, fromPromise, type AnyStateMachine } from 'xstate';
import { handoffMachine, type ValidationOutcome } from '../machines/handoff.js';

interface StateConfig {
  [key: string]: unknown;
  states?: Record<string, StateConfig>;
}

const base = handoffMachine.config as unknown as StateConfig & { states: Record<string, StateConfig> };
const live = base.states['live']!;
const implementations = handoffMachine.implementations;

/** `live` gets `after: { deadline }`; with no deadline the delay is undefined, which XState raises at once (guarded). */
export const afterMachine: AnyStateMachine = createMachine(
  {
    ...base,
    states: {
      ...base.states,
      live: { ...live, after: { deadline: { guard: 'hasDeadline', target: '#expired', actions: 'recordExpiry' } } },
    },
  } as never,
  {
    ...implementations,
    delays: { deadline: ({ context }: { context: { deadlineMs: number | undefined } }) => context.deadlineMs },
  } as never,
);

const OUTCOME: ValidationOutcome = { ok: true, text: '{}' };

/**
 * `validating` invokes a promise actor that resolves (after one turn of the event loop, like the engine's job) with the
 * outcome; its `onDone` feeds the machine the same `VALIDATED` event the engine sends.
 */
export const invokeMachine: AnyStateMachine = createMachine(
  {
    ...base,
    states: {
      ...base.states,
      live: {
        ...live,
        states: {
          ...live.states,
          validating: {
            ...live.states!['validating'],
            entry: undefined,
            exit: undefined,
            invoke: {
              id: 'validation',
              src: 'validate',
              onDone: {
                actions: ({ self, event }: { self: { send: (e: object) => void }; event: { output: object } }) => {
                  self.send({ type: 'VALIDATED', ...event.output });
                },
              },
            },
          },
        },
      },
    },
  } as never,
  {
    ...implementations,
    actors: {
      validate: fromPromise(
        () =>
          new Promise<ValidationOutcome>((resolve) => {
            setImmediate(() => {
              resolve(OUTCOME);
            });
          }),
      ),
    },
  } as never,
);

const ACCEPT = { type: 'ACCEPT', candidate: { hash: 'h', text: 't' }, at: 0 } as const;

/** The shipped machine, driven as the engine drives it: ACCEPT, one turn of the event loop, VALIDATED, stop. */
export async function shippedLifecycleAsync(): Promise<unknown> {
  const actor = createActor(handoffMachine, { input: { requestId: 'r' } });
  actor.start();
  actor.send(ACCEPT);
  await new Promise<void>((resolve) => {
    setImmediate(resolve);
  });
  actor.send({ type: 'VALIDATED', ...OUTCOME, at: 0 });
  const snap = actor.getSnapshot();
  actor.stop();
  return snap;
}

/** The invoke variant: ACCEPT, wait until the invoked validation has brought the machine to `completed`, stop. */
export async function invokeLifecycleAsync(): Promise<unknown> {
  const actor = createActor(invokeMachine, { input: { requestId: 'r' } });
  actor.start();
  const done = new Promise<void>((resolve) => {
    actor.subscribe((snap) => {
      if (snap.hasTag('terminal')) resolve();
    });
  });
  actor.send(ACCEPT);
  await done;
  const snap = actor.getSnapshot();
  actor.stop();
  return snap;
}

/** A synchronous lifecycle (createActor, start, ACCEPT, VALIDATED, stop) of any of the machines. */
export function syncLifecycle(machine: AnyStateMachine): unknown {
  const actor = createActor(machine, { input: { requestId: 'r' } });
  actor.start();
  actor.send(ACCEPT);
  actor.send({ type: 'VALIDATED', ...OUTCOME, at: 0 });
  const snap: unknown = actor.getSnapshot();
  actor.stop();
  return snap;
}
