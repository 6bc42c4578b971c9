import Foundation
import HomeportStorage
import Synchronization

/// The signed-in callers this process has just read, so that a client's next requests skip the
/// database: token → session and account, in front of the one ``SessionReader``.
///
/// Keyed by the token itself, so that a hit hashes nothing (SHA-256 and its hex were a tenth of
/// a signed-in request's instructions). The tokens stay in this process's memory, as each
/// request's header does, until their entry is swept out (at the first store after it is past
/// ``maximumAge``, or a lookup of it): they are never written, logged or sent.
///
/// An ended session must never get through for longer than a second anywhere. Three things
/// keep that bound:
/// - **Age.** An entry serves for at most ``maximumAge`` (one second by default) after it was
///   read, and never past its session's expiry.
/// - **Ends in this process.** Every session that ends here (``SessionStore`` deletes it:
///   logout, password change or reset, hold, reject) moves a process-wide generation on, and
///   entries of an older generation are not served. An entry is stored with the generation read
///   *before* its row was, so a row read while a session ended is never served.
/// - **Ends elsewhere.** On PostgreSQL, the same deletes `NOTIFY` every replica in their
///   transaction, and each replica's ``PostgresListener`` moves the generation on when it hears
///   one. While that listener is down, the cache serves nothing (``trusted`` is false) until it
///   listens again. Other processes on one SQLite file (the command line's `users hold`, a second
///   server) are bounded by age alone.
///
/// Only signed-in callers are kept: a pre-login session's standing changes under it.
final class SessionCache: Sendable {
    /// The PostgreSQL channel session ends are announced on.
    static let channel = "homeport_sessions_ended"

    private struct Key: Hashable {
        var token: String
        var kind: SessionKind
    }

    private struct Entry {
        var session: Session
        var account: Account
        var readAt: ContinuousClock.Instant
        var generation: UInt64
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var trusted: Bool
        /// When entries past their age were last swept out.
        var swept = ContinuousClock.now
    }

    private let state: Mutex<State>
    /// Entries kept at most; past it, the cache starts over (a second's worth of readers).
    let capacity: Int
    /// How long an entry serves after its row was read (one second unless configured).
    let maximumAge: Duration

    /// Moves on whenever a session ends in this process or a replica says one ended.
    private static let generation = Atomic<UInt64>(0)

    /// A cache; `trusted` false serves nothing until ``listenerReported(_:)`` says `ready`.
    init(trusted: Bool, maximumAge: Duration = .seconds(1), capacity: Int = 50_000) {
        state = Mutex(State(trusted: trusted))
        self.maximumAge = maximumAge
        self.capacity = capacity
    }

    /// The generation to store a row with: read it before the row.
    static var currentGeneration: UInt64 { generation.load(ordering: .acquiring) }

    /// A session ended (in this process, or a replica announced one): no entry read before now
    /// is served again.
    static func sessionsEnded() {
        generation.add(1, ordering: .releasing)
    }

    /// The cached session and account of a live, signed-in session, if fresh; `now` is the wall
    /// clock in Unix seconds (for the session's expiry).
    func lookup(token: String, kind: SessionKind, now: Int64) -> (Session, Account)? {
        let current = Self.currentGeneration
        let instant = ContinuousClock.now
        return state.withLock { state in
            guard state.trusted, let entry = state.entries[Key(token: token, kind: kind)] else { return nil }
            guard entry.generation == current, instant - entry.readAt < maximumAge,
                entry.session.expiresAt > now
            else {
                state.entries[Key(token: token, kind: kind)] = nil
                return nil
            }
            return (entry.session, entry.account)
        }
    }

    /// Keeps a signed-in session, read with `token` at `generation` (read before the row).
    func store(_ session: Session, _ account: Account, token: String, generation: UInt64) {
        let instant = ContinuousClock.now
        state.withLock { state in
            guard state.trusted, generation == Self.currentGeneration else { return }
            // Tokens never read again would stay: once an age, everything past it goes.
            if instant - state.swept >= maximumAge {
                let current = Self.currentGeneration
                state.entries = state.entries.filter {
                    $0.value.generation == current && instant - $0.value.readAt < maximumAge
                }
                state.swept = instant
            }
            if state.entries.count >= capacity { state.entries.removeAll(keepingCapacity: true) }
            state.entries[Key(token: token, kind: session.kind)] = Entry(
                session: session, account: account, readAt: instant, generation: generation)
        }
    }

    /// Entries held right now, fresh or not.
    var count: Int { state.withLock { $0.entries.count } }

    /// What the PostgreSQL listener says: a notification or a reconnection ends every entry; a
    /// lost connection stops the cache from serving until the listener is ready again.
    func listenerReported(_ event: PostgresListener.Event) {
        Self.sessionsEnded()
        state.withLock { state in
            state.entries.removeAll(keepingCapacity: true)
            switch event {
            case .ready: state.trusted = true
            case .lost: state.trusted = false
            case .notified: break
            }
        }
    }
}
