import HomeportStorage

/// The `product_codes` table: the notification codes products declare through the product API,
/// each owned by the key that declared it. Only working keys' codes are in the catalogue.
struct ProductCatalogueStore {
    let db: any SQLExecutor

    init(_ db: any SQLExecutor) {
        self.db = db
    }

    /// The codes of every working key, by code.
    func codes() throws -> [CatalogueCode] {
        try db.execute(
            """
            SELECT c.code, c.title FROM product_codes c JOIN product_keys k ON k.id = c.key_id
            WHERE k.revoked_at IS NULL ORDER BY c.code
            """
        ).compactMap { row in
            guard let code = row.string("code"), let title = row.string("title") else { return nil }
            return CatalogueCode(code: code, title: title)
        }
    }

    /// The working key that declared `code`, if one did.
    func owner(of code: String) throws -> Int64? {
        try db.execute(
            """
            SELECT c.key_id FROM product_codes c JOIN product_keys k ON k.id = c.key_id
            WHERE c.code = $1 AND k.revoked_at IS NULL
            """, [.text(code)]
        ).first?.int("key_id")
    }

    /// Replaces the codes `key` declared with `codes`; returns those another key holds (the
    /// caller then rolls back). Call it inside a transaction.
    func replace(key: Int64, with codes: [CatalogueCode]) throws -> [String] {
        try db.execute("DELETE FROM product_codes WHERE key_id = $1", [.integer(key)])
        var taken: [String] = []
        for code in codes {
            let inserted = try db.execute(
                "INSERT INTO product_codes (code, key_id, title) VALUES ($1, $2, $3) ON CONFLICT (code) DO NOTHING RETURNING code",
                [.text(code.code), .integer(key), .text(code.title)])
            if inserted.isEmpty { taken.append(code.code) }
        }
        return taken
    }
}
