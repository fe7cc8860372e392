// A page's production build with Rollup: the package resolved as a browser build would, minified by terser.
// The entry and the output come from the environment (tests/web/test_page_bundles.py sets them).
import { nodeResolve } from "@rollup/plugin-node-resolve";
import terser from "@rollup/plugin-terser";

export default {
  input: process.env.SPEECHCLOCK_ENTRY,
  output: { file: process.env.SPEECHCLOCK_OUT, format: "iife" },
  plugins: [nodeResolve({ browser: true }), terser()],
};
