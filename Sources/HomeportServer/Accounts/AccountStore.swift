import Foundation
import HomeportStorage

/// Accounts in the `users` table.
public struct AccountStore: Sendable {
    let database: any Database

    /// Creates a store.
    public init(database: any Database) {
        self.database = database
    }

    /// Creates an account; `nil` when the address is taken.
    public func create(email: String, passwordHash: String, approval: Approval, at now: Int64) throws -> Account? {
        let rows = try database.execute(
            """
            INSERT INTO users (email, password_hash, approval, created_at, password_changed_at)
            VALUES ($1, $2, $3, $4, $4) ON CONFLICT (email) DO NOTHING
            RETURNING id, email, password_hash, approval, created_at
            """, [.text(email), .text(passwordHash), .text(approval.rawValue), .integer(now)])
        return rows.first.flatMap(Self.account)
    }

    /// The account with this (normalised) address.
    public func find(email: String) throws -> Account? {
        try database.execute(
            "SELECT id, email, password_hash, approval, created_at FROM users WHERE email = $1", [.text(email)]
        ).first.flatMap(Self.account)
    }

    /// The account with this id.
    public func find(id: Int64) throws -> Account? {
        try database.execute(
            "SELECT id, email, password_hash, approval, created_at FROM users WHERE id = $1", [.integer(id)]
        ).first.flatMap(Self.account)
    }

    /// Every account, oldest first.
    public func all() throws -> [Account] {
        try database.execute("SELECT id, email, password_hash, approval, created_at FROM users ORDER BY id")
            .compactMap(Self.account)
    }

    /// Sets an account's approval stage; false when there is no such account.
    @discardableResult
    public func setApproval(_ approval: Approval, email: String) throws -> Bool {
        !(try database.execute(
            "UPDATE users SET approval = $1 WHERE email = $2 RETURNING id", [.text(approval.rawValue), .text(email)]
        ).isEmpty)
    }

    static func account(_ row: Row) -> Account? {
        guard let id = row.int("id"), let email = row.string("email"), let hash = row.string("password_hash"),
            let approval = row.string("approval").flatMap(Approval.init(rawValue:))
        else { return nil }
        let created = Date(timeIntervalSince1970: TimeInterval(row.int("created_at") ?? 0))
        return Account(id: id, email: email, passwordHash: hash, approval: approval, createdAt: created)
    }
}
