import Testing

/// Slices of the suite, for running one part of it (`swift test --filter tag:postgres`) or
/// leaving one out (`swift test --skip tag:browser`); a suite's tags are its tests' too.
extension Tag {
    /// Starts processes of its own: a server binary, a Python peer, nginx, Caddy or Chromium.
    @Tag public static var process: Self
    /// Needs the PostgreSQL test cluster (`scripts/test` starts it).
    @Tag public static var postgres: Self
    /// Held against another implementation or a stand-in an independent library checks:
    /// django-allauth, PyJWT, google-auth, http_ece, h2.
    @Tag public static var interop: Self
    /// Drives headless Chromium.
    @Tag public static var browser: Self
    /// Checks what the README, `docs/` and the DocC articles say against the code.
    @Tag public static var docs: Self
}
