import HomeportServer

/// BookOrbit's tables, in its own migration component (numbered from 1, apart from Homeport's).
enum BookOrbitSchema {
    static let migrations = [
        Migration(version: 1, name: "books_and_loans") { dialect in
            let id = dialect == .postgres ? "BIGSERIAL PRIMARY KEY" : "INTEGER PRIMARY KEY AUTOINCREMENT"
            return [
                """
                CREATE TABLE IF NOT EXISTS bookorbit_books (
                    id \(id),
                    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    title TEXT NOT NULL,
                    author TEXT,
                    added_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX IF NOT EXISTS bookorbit_books_user ON bookorbit_books (user_id, id)",
                // One loan per book at a time; a loan is prepared, then ready (and its owner notified).
                """
                CREATE TABLE IF NOT EXISTS bookorbit_loans (
                    id \(id),
                    book_id BIGINT NOT NULL UNIQUE REFERENCES bookorbit_books (id) ON DELETE CASCADE,
                    user_id BIGINT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
                    state TEXT NOT NULL CHECK (state IN ('preparing', 'ready')),
                    ready_at BIGINT NOT NULL,
                    created_at BIGINT NOT NULL
                )
                """,
                "CREATE INDEX IF NOT EXISTS bookorbit_loans_due ON bookorbit_loans (state, ready_at)",
            ]
        }
    ]
}
