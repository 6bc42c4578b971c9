/// What waits on a connection for its transaction to commit: whoever else reads the rows it
/// wrote is woken only once they can see them, and not at all when the transaction rolls back.
/// A connection is used by one thread at a time, and so are its hooks.
public final class CommitHooks {
    /// Whether the connection is in a transaction that ``Database/transaction(_:)`` began.
    public private(set) var inTransaction = false
    private var actions: [() -> Void] = []

    init() {}

    /// A transaction begins on the connection.
    func begin() {
        inTransaction = true
        actions = []
    }

    /// The transaction committed: what waited for it, to run now.
    func committed() -> [() -> Void] {
        defer { ended() }
        return actions
    }

    /// The transaction ended without committing: nothing that waited runs.
    func ended() {
        inTransaction = false
        actions = []
    }

    func add(_ action: @escaping () -> Void) {
        actions.append(action)
    }
}

extension DatabaseConnection {
    /// Runs `action` once this connection's transaction commits, or at once when it is in none;
    /// never when the transaction rolls back (like Django's `transaction.on_commit`).
    public func afterCommit(_ action: @escaping () -> Void) {
        if commitHooks.inTransaction { commitHooks.add(action) } else { action() }
    }
}
