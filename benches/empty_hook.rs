//! The baseline for `benches/capture.rs`: the least a hook process can do (drain stdin,
//! print `{}`), compiled with the same optimisation level as cmstore.

use std::io::{self, Write};

fn main() {
    let _ = io::copy(&mut io::stdin().lock(), &mut io::sink());
    let _ = writeln!(io::stdout(), "{{}}");
}
