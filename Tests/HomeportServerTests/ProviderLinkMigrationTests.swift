import HomeportStorage
import HomeportTestSupport
import Testing

@testable import HomeportServer

@Suite(
    "Migration 30: the links an existing database holds are proven only if the address was verified first",
    .tags(.postgres))
struct ProviderLinkMigrationTests {
    @Test(
        "a link made after its account's address was verified is proven; one made before, or never verified, is not",
        arguments: Backend.allCases)
    func backfill(backend: Backend) throws {
        let (url, cleanUp) = try backend.makeDatabaseURL()
        defer { cleanUp() }
        let database = try url.open()
        defer { database.close() }
        _ = try Migrator(migrations: HomeportSchema.migrations.filter { $0.version < 30 }).migrate(database)
        // Ada verified at 100 and linked at 200; Bob linked at 100 and verified at 200; Carol
        // linked and never verified.
        for (id, email, verifiedAt, linkedAt) in [
            (1, "ada@example.com", Int64?.some(100), Int64(200)), (2, "bob@example.com", 200, 100),
            (3, "carol@example.com", nil, 100),
        ] {
            try database.execute(
                """
                INSERT INTO users (id, email, password_hash, approval, created_at, password_changed_at)
                VALUES ($1, $2, 'x', 'approved', 0, 0)
                """, [.integer(Int64(id)), .text(email)])
            if let verifiedAt {
                try database.execute(
                    "INSERT INTO verified_emails (user_id, verified_at) VALUES ($1, $2)",
                    [.integer(Int64(id)), .integer(verifiedAt)])
            }
            try database.execute(
                """
                INSERT INTO provider_links (issuer, subject, provider_id, user_id, email, created_at)
                VALUES ('https://id.example.net', $1, 'household', $2, NULL, $3)
                """, [.text("person-\(id)"), .integer(Int64(id)), .integer(linkedAt)])
        }
        #expect(
            try Migrator(migrations: HomeportSchema.migrations.filter { $0.version <= 30 }).migrate(database) == [30])
        let proven = try (1...3).map { id in
            try ProviderLinkStore(database).all(userID: Int64(id)).map(\.addressProven)
        }
        #expect(proven == [[true], [false], [false]])
    }
}
