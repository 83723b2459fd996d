import { AppError, validationError } from '../../shared/errors.js';
import { isUuid, newId } from '../../shared/ids.js';
import {
  addThreadLabels,
  findLabel,
  findLabelByName,
  listLabels,
  listLabelsOfThreads,
  removeLabel,
  removeThreadLabels,
  saveLabel,
  updateLabel,
  type InboxLabel,
} from '../../store/inboxes.js';
import { findInbox, findInboxThread, type InboxDeps } from './inbox-lookup.js';
import { labelView, threadLabelView } from './inbox-views.js';

/** At most this many labels in one add or set, as Resend takes them. */
const MAX_THREAD_LABELS = 10;
/** Labels one inbox may have. */
const MAX_LABELS = 100;
const COLOR = /^#[0-9A-Fa-f]{6}$/;
/** Colours given to labels created without one, in turn. */
const PALETTE = ['#E93D82', '#3E63DD', '#30A46C', '#F76B15', '#8E4EC6', '#12A594', '#E5484D', '#FFC53D'];

type LabelView = ReturnType<typeof labelView>;
type ThreadLabelView = ReturnType<typeof threadLabelView>;

async function labelsOf(
  deps: InboxDeps,
  workspaceId: string,
  inboxRef: string,
  labelIds: string[],
  field: string,
): Promise<InboxLabel[]> {
  const box = await findInbox(deps, workspaceId, inboxRef);
  const unique = [...new Set(labelIds.map((l) => l.toLowerCase()))];
  const found: InboxLabel[] = [];
  for (const [i, label] of (
    await Promise.all(unique.map((id) => (isUuid(id) ? findLabel(deps.db, box.id, id) : Promise.resolve(undefined))))
  ).entries()) {
    if (!label) throw new AppError('not_found', `${field}: label ${unique[i]} not found in this inbox`, { field });
    found.push(label);
  }
  return found;
}

const threadLabels = async (deps: InboxDeps, threadId: string): Promise<ThreadLabelView[]> =>
  (await listLabelsOfThreads(deps.db, [threadId])).get(threadId)?.map(threadLabelView) ?? [];

function checkLabel(input: { name?: string | undefined; color?: string | undefined }) {
  if (
    input.name !== undefined &&
    (input.name.trim() === '' || input.name.length > 50 || /[\u0000-\u001f]/.test(input.name))
  ) {
    throw validationError('name', 'must be 1 to 50 printable characters');
  }
  if (input.color !== undefined && !COLOR.test(input.color))
    throw validationError('color', 'must be a colour as #RRGGBB');
}

/** Label ids of a thread filter: labels are named by id, or by name (the form a person types). */
export async function labelFilter(
  deps: InboxDeps,
  workspaceId: string,
  inboxRef: string,
  names: string[] | undefined,
): Promise<string[] | undefined> {
  if (!names?.length) return undefined;
  const box = await findInbox(deps, workspaceId, inboxRef);
  const found = await Promise.all(
    names.map(
      async (n) =>
        (isUuid(n) ? await findLabel(deps.db, box.id, n.toLowerCase()) : undefined) ??
        (await findLabelByName(deps.db, box.id, n)),
    ),
  );
  // An unknown label matches no thread: an empty list of ids would match every thread.
  return found.map((l) => l?.id ?? '00000000-0000-0000-0000-000000000000');
}

export async function listInboxLabels(deps: InboxDeps, workspaceId: string, inboxRef: string): Promise<LabelView[]> {
  const box = await findInbox(deps, workspaceId, inboxRef);
  return (await listLabels(deps.db, box.id)).map(labelView);
}

export async function createInboxLabel(
  deps: InboxDeps,
  workspaceId: string,
  inboxRef: string,
  input: { name: string; color?: string | undefined },
): Promise<LabelView> {
  const box = await findInbox(deps, workspaceId, inboxRef);
  checkLabel(input);
  const existing = await listLabels(deps.db, box.id);
  if (existing.length >= MAX_LABELS) throw new AppError('invalid_state', `An inbox has at most ${MAX_LABELS} labels`);
  const name = input.name.trim();
  if (existing.some((l) => l.name === name))
    throw new AppError('already_exists', `name: the inbox already has a label named ${name}`, { field: 'name' });
  const label: InboxLabel = {
    id: newId(),
    workspace_id: workspaceId,
    inbox_id: box.id,
    name,
    color: (input.color ?? PALETTE[existing.length % PALETTE.length]!).toUpperCase(),
    created_at: deps.clock.now(),
  };
  await saveLabel(deps.db, label);
  await deps.durable();
  return labelView(label);
}

export async function updateInboxLabel(
  deps: InboxDeps,
  workspaceId: string,
  inboxRef: string,
  labelId: string,
  changes: { name?: string | undefined; color?: string | undefined },
): Promise<LabelView> {
  const [label] = await labelsOf(deps, workspaceId, inboxRef, [labelId], 'labelId');
  if (changes.name === undefined && changes.color === undefined) throw validationError('name', 'give name or color');
  checkLabel(changes);
  const name = changes.name?.trim();
  // A name another label of the inbox has is already_exists (store/inboxes.ts).
  const update = {
    ...(name !== undefined ? { name } : {}),
    ...(changes.color !== undefined ? { color: changes.color.toUpperCase() } : {}),
  };
  await updateLabel(deps.db, label!.id, update);
  await deps.durable();
  return labelView({ ...label!, ...update });
}

export async function removeInboxLabel(deps: InboxDeps, workspaceId: string, inboxRef: string, labelId: string) {
  const [label] = await labelsOf(deps, workspaceId, inboxRef, [labelId], 'labelId');
  await removeLabel(deps.db, label!.id);
  await deps.durable();
  return { id: label!.id };
}

/** Adds labels to a thread, or (`replace`) makes them its only ones, in one transaction. */
export async function labelThread(
  deps: InboxDeps,
  workspaceId: string,
  inboxRef: string,
  threadId: string,
  labelIds: string[],
  replace: boolean,
): Promise<ThreadLabelView[]> {
  if (!replace && (labelIds.length < 1 || labelIds.length > MAX_THREAD_LABELS))
    throw validationError('labels', `between 1 and ${MAX_THREAD_LABELS} label ids`);
  if (replace && labelIds.length > MAX_THREAD_LABELS)
    throw validationError('labels', `at most ${MAX_THREAD_LABELS} label ids`);
  const { thread: row } = await findInboxThread(deps, workspaceId, inboxRef, threadId);
  const ids = (await labelsOf(deps, workspaceId, inboxRef, labelIds, 'labels')).map((l) => l.id);
  if (replace) {
    await deps.db.transaction().execute(async (trx) => {
      await removeThreadLabels(trx, row.id);
      await addThreadLabels(trx, row.id, ids, deps.clock.now());
    });
  } else {
    await addThreadLabels(deps.db, row.id, ids, deps.clock.now());
  }
  await deps.durable();
  return threadLabels(deps, row.id);
}

export async function unlabelThread(
  deps: InboxDeps,
  workspaceId: string,
  inboxRef: string,
  threadId: string,
  labelId: string,
): Promise<ThreadLabelView[]> {
  const { thread: row } = await findInboxThread(deps, workspaceId, inboxRef, threadId);
  const [label] = await labelsOf(deps, workspaceId, inboxRef, [labelId], 'labelId');
  await removeThreadLabels(deps.db, row.id, [label!.id]);
  await deps.durable();
  return threadLabels(deps, row.id);
}
