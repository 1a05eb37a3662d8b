//! The conformance crate's own tests, one binary with a module per area: the reference
//! and the sparse backend through the test macro (`cpu`, `sparse`), the runner binary
//! (`runner`), the example plugin loaded from its library (`plugin`), the self-test that
//! plants faults and checks the suite catches exactly them (`selftest`), the oracle's and
//! the CPU kernels' elementary functions against NumPy (`golden`), and the counts the
//! READMEs quote (`readme_counts`).

mod cpu;
mod frames;
mod golden;
mod plugin;
mod readme_counts;
mod runner;
mod selftest;
mod sparse;
