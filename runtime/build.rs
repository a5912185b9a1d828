// Derives the two engine cfgs from the backend features, so that the rest of
// the crate says `cfg(rt_monoio)` or `cfg(rt_glommio)` instead of repeating
// the list of features that each engine backs.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(rt_monoio)");
    println!("cargo::rustc-check-cfg=cfg(rt_glommio)");
    let on = |name: &str| std::env::var_os(format!("CARGO_FEATURE_{name}")).is_some();
    if on("IO_URING") || on("EPOLL") || on("KQUEUE") || on("DEVPOLL") {
        println!("cargo::rustc-cfg=rt_monoio");
    }
    if on("GLOMMIO") {
        println!("cargo::rustc-cfg=rt_glommio");
    }
}
