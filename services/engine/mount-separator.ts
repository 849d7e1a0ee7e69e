/**
 * Separates a mount node's id from the ids of the nodes spliced in for it (`<mount>__<node>`);
 * reserved in the node ids of workflows as written.
 */
export const MOUNT_SEPARATOR = '__';
