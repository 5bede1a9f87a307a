//! The one seam through which the core takes randomness: [`Entropy`].

use std::fmt;

/// The source of every random byte the sealer uses: a cryptographically secure
/// random number generator (CSPRNG), supplied by the edge.
///
/// A [`Sealer`](super::Sealer) draws from it and from nothing else: 24 bytes per
/// seal for the XAES-256-GCM nonce, and 16 more when it seals a flow's first round,
/// for the flow id. Nothing else in the core reads randomness, so the core builds
/// where no operating system is at hand (`wasm32-unknown-unknown`, edge and
/// serverless runtimes) once the host supplies an implementation. See the module
/// documentation of [`seal`](super) for why random nonces are safe here and what a
/// weak source breaks.
///
/// # Contract
///
/// - `fill` overwrites all of `dest` with fresh bytes, independent and uniformly
///   random, unpredictable to anyone without the generator's state, and never
///   repeated, neither across calls nor across processes that share a key.
/// - When the source cannot deliver (an unseeded generator, a failing host call) it
///   panics or blocks; it never returns with `dest` partly filled or predictable.
/// - It is shared by every clone of a sealer and called from any thread at once
///   (`Send + Sync`, `&self`): a generator with mutable state keeps it per thread or
///   behind a lock.
///
/// With the `os-rng` feature (on by default) [`OsEntropy`] is the implementation
/// that [`Sealer::new`](super::Sealer::new) uses. Without it, pass one to
/// [`Sealer::with_entropy`](super::Sealer::with_entropy), for example over the
/// runtime's `crypto.getRandomValues` in a WebAssembly host.
///
/// # Why a trait of our own
///
/// `rand_core`'s `CryptoRng` takes `&mut self`: one generator could not be shared by
/// every clone of a `Sealer` across threads without a lock on the sealing path, and
/// the public API would follow `rand_core`'s major versions. A one-method `&self`
/// trait lets a host wrap whatever it has (a thread-local generator, a host call,
/// a fixed sequence in tests) in a few lines.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU8, Ordering};
/// use mrtr::seal::{Entropy, Key, Keyring, SealConfig, Sealer};
///
/// /// A counter, NOT random: for a deterministic test only.
/// #[derive(Debug, Default)]
/// struct Counter(AtomicU8);
///
/// impl Entropy for Counter {
///     fn fill(&self, dest: &mut [u8]) {
///         for b in dest {
///             *b = self.0.fetch_add(1, Ordering::Relaxed);
///         }
///     }
/// }
///
/// let ring = Keyring::new(Key::from_secret(&[7u8; 32]).unwrap());
/// let sealer = Sealer::with_entropy(ring, SealConfig::default(), Arc::new(Counter::default()));
/// # let _ = sealer;
/// ```
pub trait Entropy: Send + Sync + fmt::Debug {
    /// Fills `dest` entirely with fresh cryptographically secure random bytes.
    fn fill(&self, dest: &mut [u8]);
}

/// The operating system's randomness as the sealer has always used it: `rand`'s
/// per-thread generator (ChaCha12 seeded from the operating system and reseeded
/// periodically), so a seal costs no system call.
///
/// Available with the `os-rng` feature (on by default, and with `server`).
///
/// **Fork caveat**: the per-thread generator is not reseeded on `fork`; a process
/// that forks after sealing must reseed in the child (`rand::rng().reseed()`)
/// before sealing again, or parent and child may draw the same nonces.
///
/// # Panics
///
/// [`Entropy::fill`] panics if the operating system cannot seed the generator (a
/// broken host).
#[cfg(feature = "os-rng")]
#[derive(Debug, Clone, Copy, Default)]
pub struct OsEntropy;

#[cfg(feature = "os-rng")]
impl Entropy for OsEntropy {
    fn fill(&self, dest: &mut [u8]) {
        use rand::Rng as _;
        rand::rng().fill_bytes(dest);
    }
}

#[cfg(all(test, feature = "os-rng"))]
mod tests {
    use super::*;

    #[test]
    fn os_entropy_fills_and_differs() {
        let (mut a, mut b) = ([0u8; 40], [0u8; 40]);
        OsEntropy.fill(&mut a);
        OsEntropy.fill(&mut b);
        assert_ne!(a, b);
        assert_ne!(a, [0u8; 40]);
    }
}
