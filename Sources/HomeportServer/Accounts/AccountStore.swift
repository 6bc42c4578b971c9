import Foundation
import HomeportStorage

/// The `users` table.
struct AccountStore {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    /// Creates an account; `nil` when the address is taken.
    func create(email: String, passwordHash: String, approval: Approval, at now: Int64) throws -> Account? {
        try db.execute(
            """
            INSERT INTO users (email, password_hash, approval, created_at, password_changed_at)
            VALUES ($1, $2, $3, $4, $4) ON CONFLICT (email) DO NOTHING
            RETURNING \(Self.columns)
            """, [.text(email), .text(passwordHash), .text(approval.rawValue), .integer(now)]
        ).first.flatMap { Self.account($0) }
    }

    /// The account with this (normalised) address.
    func find(email: String) throws -> Account? {
        try db.execute(
            "SELECT \(Self.columns) FROM users WHERE email = $1", [.text(email)]
        ).first.flatMap { Self.account($0) }
    }

    /// The account with this id.
    func find(id: Int64) throws -> Account? {
        try db.execute(
            "SELECT \(Self.columns) FROM users WHERE id = $1", [.integer(id)]
        ).first.flatMap { Self.account($0) }
    }

    /// Every account, oldest first.
    func all() throws -> [Account] {
        try db.execute("SELECT \(Self.columns) FROM users ORDER BY id")
            .compactMap { Self.account($0) }
    }

    /// Sets an account's approval stage; false when there is no such account.
    func setApproval(_ approval: Approval, id: Int64) throws -> Bool {
        !(try db.execute(
            "UPDATE users SET approval = $1 WHERE id = $2 RETURNING id", [.text(approval.rawValue), .integer(id)]
        ).isEmpty)
    }

    /// Sets an account's approval stage only if it is one of `stages` now, in one statement (two
    /// decisions at once: the second finds the first's stage); false when it is not.
    func setApproval(_ approval: Approval, id: Int64, from stages: [Approval]) throws -> Bool {
        let list = stages.map { "'\($0.rawValue)'" }.joined(separator: ", ")
        return
            !(try db.execute(
                "UPDATE users SET approval = $1 WHERE id = $2 AND approval IN (\(list)) RETURNING id",
                [.text(approval.rawValue), .integer(id)]
            ).isEmpty)
    }

    /// Replaces the password hash, only if it is still `old` (the one a check was made against).
    /// Returns whether it was replaced.
    func replacePasswordHash(id: Int64, from old: String, to new: String, at now: Int64) throws -> Bool {
        let replaced =
            !(try db.execute(
                """
                UPDATE users SET password_hash = $1, password_changed_at = $2
                WHERE id = $3 AND password_hash = $4 RETURNING id
                """, [.text(new), .integer(now), .integer(id), .text(old)]
            ).isEmpty)
        if replaced { try forgetImportedHash(id: id) }
        return replaced
    }

    /// Records that the account's hash came from another system (`users import`).
    func markImportedHash(id: Int64) throws {
        try db.execute(
            "INSERT INTO imported_password_hashes (user_id) VALUES ($1) ON CONFLICT (user_id) DO NOTHING",
            [.integer(id)])
    }

    /// The account's hash is Homeport's own now.
    private func forgetImportedHash(id: Int64) throws {
        try db.execute("DELETE FROM imported_password_hashes WHERE user_id = $1", [.integer(id)])
    }

    /// The hashes of the accounts whose hash came from another system and is not remade yet.
    func importedHashes() throws -> [String] {
        try db.execute(
            """
            SELECT u.password_hash FROM imported_password_hashes i JOIN users u ON u.id = i.user_id
            """
        ).compactMap { $0.string("password_hash") }
    }

    /// Deletes the account's row; what references it goes with it (ON DELETE CASCADE).
    func delete(id: Int64) throws {
        try db.execute("DELETE FROM users WHERE id = $1", [.integer(id)])
    }

    /// Locks the account's row until the transaction ends (an update that changes nothing);
    /// false when there is no such account. On SQLite the transaction holds the whole
    /// database's write lock already (`BEGIN IMMEDIATE`), so the row is only read.
    func lock(id: Int64) throws -> Bool {
        let sql =
            db.dialect == .sqlite
            ? "SELECT id FROM users WHERE id = $1" : "UPDATE users SET approval = approval WHERE id = $1 RETURNING id"
        return !(try db.execute(sql, [.integer(id)]).isEmpty)
    }

    /// Sets the password hash whatever it was (a reset, whose key proved the right to).
    func setPasswordHash(id: Int64, to new: String, at now: Int64) throws {
        try db.execute(
            "UPDATE users SET password_hash = $1, password_changed_at = $2 WHERE id = $3",
            [.text(new), .integer(now), .integer(id)])
        try forgetImportedHash(id: id)
    }

    /// The columns an ``Account`` is read from (by name: a join may select them among others).
    static let columns = "id, email, password_hash, approval, created_at"

    /// Whether the account `u` names has a verified address, as a column `email_verified` (0 or 1).
    static let emailVerifiedColumn =
        "CASE WHEN EXISTS (SELECT 1 FROM verified_emails v WHERE v.user_id = u.id) THEN 1 ELSE 0 END AS email_verified"

    /// The account in `row` (its ``columns``, by name, and ``emailVerifiedColumn`` and
    /// ``AccountGroups/column(_:)`` when selected),
    /// or `nil` when they are NULL (a pre-login session's empty join).
    static func account(_ row: Row) -> Account? {
        guard let id = row.int("id"), let email = row.string("email"), let hash = row.string("password_hash"),
            let approval = row.string("approval").flatMap(Approval.init(rawValue:))
        else { return nil }
        let created = Date(timeIntervalSince1970: TimeInterval(row.int("created_at") ?? 0))
        return Account(
            id: id, email: email, passwordHash: hash, approval: approval, createdAt: created,
            emailVerified: row.int("email_verified").map { $0 != 0 },
            groups: row.columns.contains("group_names") ? AccountGroups.parse(row.string("group_names")) : nil)
    }
}
