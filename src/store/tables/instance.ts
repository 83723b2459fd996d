/** Facts about the database itself. */

/** Facts about the database itself (the secret key's check value). */
export interface InstanceTable {
  key: string;
  value: string;
  created_at: number;
}
