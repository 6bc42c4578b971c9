import COpenSSL

/// OpenSSL, once per process.
public enum CryptoLibrary {
    /// Tells OpenSSL to keep its global state when the process exits instead of freeing it in an
    /// `atexit` handler. A thread that is still in the middle of a TLS handshake when the process
    /// exits (a losing address of a race, aborted in the background) would otherwise read state
    /// the handler is freeing, and the process would crash on its way out.
    ///
    /// Only the first initialization of OpenSSL in a process decides this: call it first thing in
    /// `main`, before anything hashes, encrypts or opens a connection. Later calls change nothing.
    public static func keepStateAtExit() {
        _ = keptAtExit
    }

    private static let keptAtExit: Bool = OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_ATEXIT), nil) == 1
}
