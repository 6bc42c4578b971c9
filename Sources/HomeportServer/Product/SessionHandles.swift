import HomeportCrypto
import Synchronization

/// The non-secret handles of sessions (``SignedIn/sessionHandle``), derived once per session and
/// kept by the session's stored form: forward auth names the session on every request a proxy
/// asks about, and a digest per request cost it a tenth of its time. Emptied whole when it holds
/// ``capacity`` handles; a handle is no secret, and one derived again is the same.
enum SessionHandles {
    static let capacity = 50_000
    private static let known = Mutex<[String: String]>([:])

    /// The handle of the session whose stored form is `keyHash`.
    static func handle(forKeyHash keyHash: String) -> String {
        if let handle = known.withLock({ $0[keyHash] }) { return handle }
        let handle = String(Digest.sha256Hex("homeport-session-handle\u{0}" + keyHash).prefix(32))
        known.withLock { known in
            if known.count >= capacity { known.removeAll(keepingCapacity: true) }
            known[keyHash] = handle
        }
        return handle
    }

    /// How many handles are kept.
    static var count: Int { known.withLock { $0.count } }
}
