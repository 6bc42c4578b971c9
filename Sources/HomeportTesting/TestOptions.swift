import Foundation
import HomeportServer

/// How a ``TestServer`` is set up: a temporary SQLite database by default, open sign-up, fast
/// password hashes, and pushes queued to the outbox (read with ``TestServer/pushes(to:)``) but
/// never sent.
public struct TestOptions: Sendable {
    /// Where the server keeps its data.
    public enum Store: Sendable, Hashable {
        /// A new SQLite file in a temporary directory, removed afterwards.
        case sqlite
        /// A PostgreSQL database at this URL (`postgres://USER@HOST:PORT/DB`); give each test a
        /// database of its own: nothing is removed from it afterwards.
        case postgres(String)
    }

    /// Where the server keeps its data.
    public var store: Store = .sqlite
    /// Budgets in force instead of the product's declared limits, by name (`--rate-limits`).
    public var budgets: [String: RateLimit] = [:]
    /// The APNs topic pushes are queued for; `nil` turns pushes off (then nothing is queued).
    public var pushTopic: String? = "org.example.homeport-tests"
    /// When the test clock starts.
    public var start = Date(timeIntervalSince1970: 1_800_000_000)

    /// The default set-up.
    public init() {}
}
