// Types from the service's contract: writes src/schema.ts from openapi.yaml, or, with
// --check, fails when the committed file is not what the spec generates today (so a
// change to the API cannot land without the client's types following it).
import { readFile, writeFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import openapiTS, { astToString } from "openapi-typescript";

const SPEC = new URL("../../../openapi.yaml", import.meta.url);
const TARGET = new URL("../src/schema.ts", import.meta.url);
const HEADER =
  "// Generated from openapi.yaml by scripts/schema.mjs (openapi-typescript): do not edit.\n" +
  "// Regenerate with `npm run generate`; `npm run check:schema` fails when it is stale.\n\n";

const generated = HEADER + astToString(await openapiTS(SPEC, {
  // A field with a default is one a caller may leave out: optional, as the spec says.
  defaultNonNullable: false,
}));

if (process.argv.includes("--check")) {
  const committed = await readFile(TARGET, "utf8").catch(() => "");
  if (committed !== generated) {
    console.error(`${fileURLToPath(TARGET)} is not what ${fileURLToPath(SPEC)} generates: ` +
      "run `npm run generate` in clients/typescript and commit the result.");
    process.exit(1);
  }
  console.log("src/schema.ts matches openapi.yaml");
} else {
  await writeFile(TARGET, generated);
  console.log(`wrote ${fileURLToPath(TARGET)}`);
}
