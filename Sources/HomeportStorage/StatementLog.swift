import Synchronization

/// Every distinct statement run on one database while it listens, with the parameters it first
/// ran with: what the index check (`EXPLAIN` of each) reads. Off by default; while nobody
/// listens, a statement costs one atomic load.
package enum StatementLog {
    private static let listeners = Atomic<Int>(0)
    private static let heard = Mutex<[String: [String: [SQLValue]]]>([:])

    /// Starts keeping the statements run on the database at `source` (an SQLite file's path, or
    /// a PostgreSQL URL as the database was opened with).
    package static func start(source: String) {
        let added = heard.withLock { heard -> Bool in
            guard heard[source] == nil else { return false }
            heard[source] = [:]
            return true
        }
        if added { listeners.add(1, ordering: .relaxed) }
    }

    /// Stops, and returns what was run: each statement once, with its first parameters.
    package static func stop(source: String) -> [(sql: String, parameters: [SQLValue])] {
        guard let statements = heard.withLock({ $0.removeValue(forKey: source) }) else { return [] }
        listeners.subtract(1, ordering: .relaxed)
        return statements.map { ($0.key, $0.value) }.sorted { $0.sql < $1.sql }
    }

    /// Notes a statement run on `source`.
    static func note(source: String, _ sql: String, _ parameters: [SQLValue]) {
        guard listeners.load(ordering: .relaxed) > 0 else { return }
        heard.withLock { heard in
            guard heard[source] != nil, heard[source]?[sql] == nil else { return }
            heard[source]?[sql] = parameters
        }
    }
}
