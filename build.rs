//! Link settings for the `cmstore` binary.
//!
//! On Linux the binary is linked as a fixed-address executable (`-no-pie`). Every agent event
//! starts a `cmstore capture` process, and a position-independent 8 MB binary makes the dynamic
//! loader apply ~17,000 relocations at each start — reading `.rela.dyn` and writing
//! `.data.rel.ro`, about 80 page faults that made capture ~0.3 ms slower than an empty process
//! (benches/HISTORY.md, "Capture"). The cost is address-space randomisation of the main binary's
//! own code; libraries, heap and stack stay randomised.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
}
