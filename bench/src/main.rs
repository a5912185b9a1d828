//! The `ringside-bench` binary; everything is in the library.

fn main() {
    std::process::exit(ringside_bench::main_with(std::env::args_os()));
}
