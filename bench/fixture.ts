/**
 * The workload of the benchmarks: one instance with a parameter schema, one request selecting six of its fields, and a
 * realistic ~2 KB candidate for it (three intents with constraints and inputs, a request-level constraint, two
 * relations, the six selected fields filled with evidence). It validates and normalises to a `complete` result.
 */
import type { EngineSession, HandoffInstance } from '../src/engine/engine.js';
import type { HandoffReply } from '../src/engine/replies.js';
import { Intent } from '../src/intent.js';

/**
 * The seed request of the MCP-level benches (a Chinese order query with a prohibition) and its complete candidate, for an
 * instance without a parameter schema.
 */
export const SEED_INPUT = '查询订单000123，不要取消订单';
export const SEED_CANDIDATE =
  '{"turnKind":"request","coverage":"complete","intents":[{"domain":null,"action":"查询","target":"订单000123","goal":"查询订单000123","understanding":"clear","constraints":[{"kind":"prohibition","text":"不要取消订单"}]}]}';

export const INSTANCE_OPTIONS = {
  description: 'Travel desk: flights, hotels and transfers.',
  domains: ['travel', 'billing'],
  language: 'en' as const,
  schema: {
    fields: {
      origin: { type: 'string' as const, description: 'departure city', required: true, pattern: '^[A-Z][A-Za-z ]+$' },
      destination: {
        type: 'string' as const,
        description: 'arrival city',
        required: true,
        pattern: '^[A-Z][A-Za-z ]+$',
      },
      departureDate: { type: 'date' as const, description: 'day of the outbound flight', required: true },
      returnDate: { type: 'date' as const, description: 'day of the return flight' },
      travellers: { type: 'integer' as const, description: 'number of travellers', minimum: 1, maximum: 9, default: 1 },
      cabin: { type: 'enum' as const, enum: ['economy', 'premium', 'business'], default: 'economy' },
      maxPrice: { type: 'number' as const, description: 'budget for the flight in EUR', minimum: 0 },
      refundable: { type: 'boolean' as const, description: 'refundable fare only' },
    },
  },
};

export const REQUEST = {
  input:
    'Book a flight from Berlin to Lisbon on 2026-12-14 for 2 adults in economy, under 600 EUR, no red-eye flights, ' +
    'window seat if possible. Then reserve a hotel near Alfama for 3 nights with breakfast, at most 150 EUR a night, ' +
    'and if the flight lands after 22:00 arrange an airport transfer. Confirm everything by Friday.',
  fields: ['origin', 'destination', 'departureDate', 'travellers', 'cabin', 'maxPrice'],
  referenceTime: '2026-11-30T09:00:00+01:00',
};

export const CANDIDATE = {
  turnKind: 'request',
  coverage: 'complete',
  intents: [
    {
      ref: 'flight',
      domain: 'travel',
      action: 'book',
      target: 'flight Berlin to Lisbon',
      goal: 'Fly from Berlin to Lisbon on 14 December 2026 with two adults in economy',
      understanding: 'clear',
      constraints: [
        { kind: 'limit', text: 'under 600 EUR' },
        { kind: 'prohibition', text: 'no red-eye flights' },
        { kind: 'preference', text: 'window seat if possible' },
      ],
      inputs: [
        { name: 'origin', value: 'Berlin' },
        { name: 'destination', value: 'Lisbon' },
        { name: 'date', value: '2026-12-14' },
        { name: 'adults', value: 2 },
        { name: 'cabin', value: 'economy' },
      ],
    },
    {
      ref: 'hotel',
      domain: 'travel',
      action: 'reserve',
      target: 'hotel near Alfama',
      goal: 'Stay three nights near Alfama with breakfast included',
      understanding: 'clear',
      constraints: [
        { kind: 'requirement', text: 'with breakfast' },
        { kind: 'limit', text: 'at most 150 EUR a night' },
      ],
      inputs: [
        { name: 'area', value: 'Alfama' },
        { name: 'nights', value: 3 },
        { name: 'breakfast', value: true },
      ],
    },
    {
      ref: 'transfer',
      domain: 'travel',
      action: 'arrange',
      target: 'airport transfer',
      goal: 'Get from Lisbon airport to the hotel when the flight lands late',
      understanding: 'clear',
      constraints: [{ kind: 'condition', text: 'if the flight lands after 22:00' }],
      inputs: [
        { name: 'from', value: 'LIS airport' },
        { name: 'to', value: 'hotel' },
      ],
      references: [{ kind: 'input', text: 'if the flight lands after 22:00' }],
    },
  ],
  constraints: [{ kind: 'deadline', text: 'Confirm everything by Friday' }],
  relations: [
    { kind: 'sequence', from: 'flight', to: 'hotel', text: 'Then reserve a hotel' },
    { kind: 'condition', from: 'flight', to: 'transfer', text: 'if the flight lands after 22:00' },
  ],
  fields: {
    origin: { status: 'filled', value: 'Berlin', evidence: 'from Berlin' },
    destination: { status: 'filled', value: 'Lisbon', evidence: 'to Lisbon' },
    departureDate: { status: 'filled', value: '2026-12-14', evidence: 'on 2026-12-14' },
    travellers: { status: 'filled', value: 2, evidence: 'for 2 adults' },
    cabin: { status: 'filled', value: 'economy', evidence: 'in economy' },
    maxPrice: { status: 'filled', value: 600, evidence: 'under 600 EUR' },
  },
};

/** The candidate as a model would send it: one compact JSON document. */
export const CANDIDATE_TEXT = JSON.stringify(CANDIDATE);

export function benchIntent(): Intent {
  return new Intent(INSTANCE_OPTIONS);
}

/** One handoff of the workload on the engine: prepare + accept of the candidate, the reply awaited (throws if not ok). */
export async function benchHandoff(session: EngineSession, instance: HandoffInstance): Promise<HandoffReply> {
  const task = session.prepare(instance, REQUEST);
  const reply = await session.accept(task.requestId, task.submissionToken, CANDIDATE_TEXT);
  if (reply.isError) throw new Error(`handoff failed: ${reply.text}`);
  return reply;
}
