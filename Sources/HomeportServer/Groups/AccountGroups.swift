import HomeportStorage

/// The groups an account belongs to (the `account_groups` table): `admin`, Homeport's own, and
/// any other name the operator gives (`family`, `kids`, a product's role such as
/// `bookorbit:librarian`). Every reader of who the caller is carries them: ``SignedIn/groups``,
/// forward auth's `X-Homeport-Groups`, the app's `GET /api/v1/account`, the product API.
struct AccountGroups {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    /// Homeport's own group: its members decide on sign-ups from the app.
    static let admin = "admin"

    /// The most groups one account holds.
    static let maximumPerAccount = 32

    /// `text` as a group's name: lowercased, 1–64 of letters, digits and `-_.:`, starting with a
    /// letter or digit (a header carries them, comma-separated); `nil` if it cannot be one.
    static func name(_ text: String) -> String? {
        // ASCII before lowercasing: Unicode's lowercase of the Kelvin sign is `k`, and one name
        // must not have two spellings.
        guard text.utf8.allSatisfy({ $0 < 0x80 }) else { return nil }
        let name = text.lowercased()
        guard (1...64).contains(name.utf8.count), let first = name.utf8.first,
            isLetterOrDigit(first),
            name.utf8.allSatisfy({
                isLetterOrDigit($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: ".")
                    || $0 == UInt8(ascii: ":")
            })
        else { return nil }
        return name
    }

    private static func isLetterOrDigit(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    /// The account's groups, by name, sorted as Swift sorts them (as ``parse(_:)`` does: a
    /// database's collation may order `a-z` and `ab` otherwise).
    func groups(userID: Int64) throws -> [String] {
        try db.execute("SELECT name FROM account_groups WHERE user_id = $1", [.integer(userID)])
            .compactMap { $0.string("name") }.sorted()
    }

    /// Puts the account in `name` (a name ``name(_:)`` accepted); false when it was in it already.
    @discardableResult
    func add(_ name: String, userID: Int64, now: Int64) throws -> Bool {
        !(try db.execute(
            """
            INSERT INTO account_groups (user_id, name, created_at) VALUES ($1, $2, $3)
            ON CONFLICT (user_id, name) DO NOTHING RETURNING name
            """, [.integer(userID), .text(name), .integer(now)]
        ).isEmpty)
    }

    /// Takes the account out of `name`; false when it was not in it.
    @discardableResult
    func remove(_ name: String, userID: Int64) throws -> Bool {
        !(try db.execute(
            "DELETE FROM account_groups WHERE user_id = $1 AND name = $2 RETURNING name",
            [.integer(userID), .text(name)]
        ).isEmpty)
    }

    /// The ids of the approved accounts in `name`, oldest first (a held or waiting member has no
    /// business with what the group is for).
    func approvedMembers(of name: String) throws -> [Int64] {
        try db.execute(
            """
            SELECT g.user_id FROM account_groups g JOIN users u ON u.id = g.user_id
            WHERE g.name = $1 AND u.approval = 'approved' ORDER BY g.user_id
            """, [.text(name)]
        ).compactMap { $0.int("user_id") }
    }

    /// The account `u` names's groups as one column, `group_names`: names joined by `,` in order,
    /// NULL for none (for a query that reads the account with its session).
    static func column(_ dialect: SQLDialect) -> String {
        switch dialect {
        case .postgres:
            "(SELECT string_agg(g.name, ',' ORDER BY g.name) FROM account_groups g WHERE g.user_id = u.id) AS group_names"
        case .sqlite:
            """
            (SELECT group_concat(name, ',') FROM (SELECT g.name FROM account_groups g WHERE g.user_id = u.id \
            ORDER BY g.name)) AS group_names
            """
        }
    }

    /// The groups in ``column(_:)``'s text.
    static func parse(_ text: String?) -> [String] {
        guard let text, !text.isEmpty else { return [] }
        return text.split(separator: ",").map(String.init).sorted()
    }
}
