/** The scratch stack scripts/ts-client-test.sh started (scripts/api-stack.sh). */
export function env(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') {
    throw new Error(`${name} is not set: run the tests through scripts/ts-client-test.sh`);
  }
  return value;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
