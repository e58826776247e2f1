/**
 * An off-domain prompt set for abstention: prompts no skill of a software-agent library
 * serves, generated reproducibly from a seed, so anyone can rebuild the exact set without data.
 *
 * Four families, each from templates filled from word lists written here:
 * - general-knowledge questions (geography, history, science, language);
 * - chit-chat and small talk (greetings, moods, opinions, thanks);
 * - everyday requests from fields a software library lacks (cooking, gardening, travel, sport,
 *   relationships, pets), some written long: several sentences of personal context, like the long
 *   task specifications of the in-domain benchmark, so that length alone cannot tell them apart;
 * - short creative writing (poems, toasts, riddles).
 *
 * Prompts come in batches labelled `offdomain1` … `offdomainN`, so `--batches 1-5` selects the
 * validation half and `6-10` the held-back half, as for SWE-Skills-Bench. Each prompt is a task with
 * `gold_skill_ids: []` and `off_domain: true`.
 *
 * @module
 */
import { invalidArgument, Rng } from "gavel-router/internal";
import type { EvalTask } from "./tasks.js";

const PLACES = ["Australia", "Peru", "Norway", "Kenya", "Vietnam", "Portugal", "Canada", "Mongolia", "Chile", "Egypt", "Iceland", "New Zealand", "Morocco", "Finland", "Argentina", "Japan"];
const PEOPLE = ["Marie Curie", "Leonardo da Vinci", "Cleopatra", "Nelson Mandela", "Ada Lovelace", "Genghis Khan", "Frida Kahlo", "Isaac Newton", "Joan of Arc", "Mahatma Gandhi", "Charles Darwin", "Amelia Earhart"];
const THINGS = ["the moon", "a rainbow", "thunder", "the tides", "autumn leaves", "a volcano", "the northern lights", "snowflakes", "honey bees", "coral reefs", "the desert", "a lighthouse"];
const FOODS = ["lasagna", "banana bread", "a lentil soup", "pancakes", "a vegetable curry", "sourdough bread", "a lemon tart", "guacamole", "risotto", "apple pie", "dumplings", "a Greek salad"];
const PLANTS = ["tomatoes", "roses", "basil", "an orchid", "a lemon tree", "succulents", "strawberries", "tulips", "a fig tree", "lavender"];
const PETS = ["my dog", "my cat", "our rabbit", "my parrot", "our hamster", "my puppy", "our old cat", "my goldfish"];
const SPORTS = ["running", "swimming", "tennis", "cycling", "yoga", "rock climbing", "football", "skiing", "rowing", "basketball"];
const MOODS = ["tired", "happy", "a bit lonely", "bored", "excited", "nervous", "grateful", "stressed"];
const DAYS = ["today", "this weekend", "tomorrow", "this morning", "tonight", "on Sunday"];
const RELATIONS = ["my sister", "my best friend", "my grandmother", "my neighbour", "my partner", "my brother", "my coworker", "my son"];
const OCCASIONS = ["a wedding", "a seventh birthday", "a retirement party", "a graduation", "an anniversary dinner", "a farewell picnic"];
const FORMS = ["a haiku", "a limerick", "a short poem", "a sonnet", "a riddle", "a toast", "a lullaby", "a four-line rhyme"];

type Fill = (r: Rng) => string;
const pick = <T>(r: Rng, xs: readonly T[]): T => xs[r.int(xs.length)];

const QUESTIONS: Fill[] = [
  (r) => `What is the capital of ${pick(r, PLACES)}?`,
  (r) => `Who was ${pick(r, PEOPLE)} and why is she or he remembered?`,
  (r) => `Why does ${pick(r, THINGS)} look the way it does?`,
  (r) => `How many people live in ${pick(r, PLACES)}, roughly?`,
  (r) => `What language do people speak in ${pick(r, PLACES)}?`,
  (r) => `When did ${pick(r, PEOPLE)} live?`,
  (r) => `Explain to a child how ${pick(r, THINGS)} forms.`,
  (r) => `What is the tallest mountain in ${pick(r, PLACES)}?`,
  (r) => `Is it true that ${pick(r, PEOPLE)} never married?`,
  (r) => `What is the best time of year to visit ${pick(r, PLACES)}?`,
];

const CHAT: Fill[] = [
  (r) => `Hi! I'm feeling ${pick(r, MOODS)} ${pick(r, DAYS)}. How are you?`,
  () => `Good morning! Thanks for your help yesterday.`,
  (r) => `Do you have a favourite season? Mine is the one with ${pick(r, THINGS)}.`,
  (r) => `Tell me something nice, I'm ${pick(r, MOODS)}.`,
  () => `What's your name, and do you ever get tired of questions?`,
  (r) => `I just got back from ${pick(r, SPORTS)} and I feel great.`,
  () => `Thank you, that was lovely. Have a nice evening!`,
  (r) => `Would you rather visit ${pick(r, PLACES)} or ${pick(r, PLACES)}?`,
];

const REQUESTS: Fill[] = [
  (r) => `Give me a recipe for ${pick(r, FOODS)} for four people.`,
  (r) => `How often should I water ${pick(r, PLANTS)} in summer?`,
  (r) => `${capital(pick(r, PETS))} keeps scratching the sofa. What can I do?`,
  (r) => `Plan a three-day trip to ${pick(r, PLACES)} on a small budget.`,
  (r) => `How do I get better at ${pick(r, SPORTS)} at forty?`,
  (r) => `What should I bring to ${pick(r, OCCASIONS)}?`,
  (r) => `${capital(pick(r, RELATIONS))} forgot my birthday. How do I tell them I'm hurt without a fight?`,
  (r) => `Suggest a weekly training plan to start ${pick(r, SPORTS)}.`,
];

/** Long requests: several sentences of personal context, then the ask. */
const CONTEXT: Fill[] = [
  (r) => `I have been ${pick(r, MOODS)} lately because work has been busy.`,
  (r) => `${capital(pick(r, RELATIONS))} is coming to stay with us ${pick(r, DAYS)}.`,
  (r) => `We live in a small flat with a balcony where I grow ${pick(r, PLANTS)}.`,
  (r) => `Last year we went to ${pick(r, PLACES)} and loved the food there.`,
  (r) => `${capital(pick(r, PETS))} is getting old and sleeps most of the day.`,
  (r) => `I started ${pick(r, SPORTS)} in the spring and want to keep going.`,
  () => `Money is a bit tight this month, so I want to keep it simple.`,
  (r) => `My grandmother used to make ${pick(r, FOODS)} every Sunday.`,
];

const CREATIVE: Fill[] = [
  (r) => `Write ${pick(r, FORMS)} about ${pick(r, THINGS)}.`,
  (r) => `Write ${pick(r, FORMS)} for ${pick(r, RELATIONS)} on ${pick(r, OCCASIONS)}.`,
  (r) => `Make up ${pick(r, FORMS)} about ${pick(r, PETS)}.`,
];

function capital(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

/** A long request: 3–6 sentences of context, then an everyday ask or a creative one. */
function longRequest(r: Rng): string {
  const n = 3 + r.int(4);
  const lines = Array.from({ length: n }, () => pick(r, CONTEXT)(r));
  const ask = r.next() < 0.7 ? pick(r, REQUESTS)(r) : pick(r, CREATIVE)(r);
  return `${[...new Set(lines)].join(" ")} ${ask} Please explain each step and keep it friendly.`;
}

const FAMILIES: { name: string; weight: number; fill: Fill }[] = [
  { name: "question", weight: 3, fill: (r) => pick(r, QUESTIONS)(r) },
  { name: "chat", weight: 2, fill: (r) => pick(r, CHAT)(r) },
  { name: "request", weight: 2, fill: (r) => pick(r, REQUESTS)(r) },
  { name: "long", weight: 2, fill: longRequest },
  { name: "creative", weight: 1, fill: (r) => pick(r, CREATIVE)(r) },
];

/** Options of {@link offDomainPrompts}. */
export interface OffDomainOptions {
  /** Seed of the generator (default 13). */
  seed?: number;
  /** Batches (default 10). */
  batches?: number;
  /** Prompts per batch (default 30). */
  perBatch?: number;
}

/**
 * The off-domain prompt set: `batches × perBatch` distinct prompts as tasks with no gold, labelled
 * `offdomain<b>`, ids `offdomain-<b>-<i>-<family>`. The same options always give the same set.
 */
export function offDomainPrompts(options: OffDomainOptions = {}): EvalTask[] {
  const seed = options.seed ?? 13;
  const batches = options.batches ?? 10;
  const perBatch = options.perBatch ?? 30;
  for (const [name, v] of [["batches", batches], ["perBatch", perBatch]] as const) {
    if (!Number.isInteger(v) || v < 1 || v > 1000) throw invalidArgument(`offDomainPrompts: ${name} must be an integer in [1, 1000]`);
  }
  if (!Number.isInteger(seed)) throw invalidArgument("offDomainPrompts: seed must be an integer");
  const r = new Rng(seed);
  const total = FAMILIES.reduce((a, f) => a + f.weight, 0);
  const seen = new Set<string>();
  const out: EvalTask[] = [];
  let draws = 0;
  for (let b = 1; b <= batches; b++) {
    for (let i = 0; i < perBatch; ) {
      if (++draws > 100 * batches * perBatch) throw invalidArgument("offDomainPrompts: the templates cannot give that many distinct prompts");
      let u = r.next() * total;
      const family = FAMILIES.find((f) => (u -= f.weight) < 0) ?? FAMILIES[FAMILIES.length - 1];
      const text = family.fill(r);
      // A repeated prompt is drawn again; the short families' space is far larger than the set.
      if (seen.has(text)) continue;
      seen.add(text);
      out.push({ id: `offdomain-${b}-${i}-${family.name}`, text, gold_skill_ids: [], batch: `offdomain${b}`, off_domain: true });
      i++;
    }
  }
  return out;
}
