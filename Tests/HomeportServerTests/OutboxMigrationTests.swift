import Foundation
import HomeportStorage
import HomeportTestSupport
import Testing

@testable import HomeportServer

@Suite("Migration 29: the outbox's apns-id loses its unique index; the outbox keeps its rows", .tags(.postgres))
struct OutboxMigrationTests {
    private static let columns =
        "id, apns_id, device_token, environment, topic, payload, collapse_id, priority, expiration, attempts, next_attempt_at, state, claimed_by, claimed_until, last_error, created_at, provider, endpoint, p256dh, auth"

    private func queue(_ database: any Database, apnsID: String, token: String) throws -> Int64 {
        let rows = try database.execute(
            """
            INSERT INTO push_outbox (apns_id, device_token, environment, topic, payload, collapse_id, priority,
                expiration, attempts, next_attempt_at, state, created_at, provider, endpoint, p256dh, auth)
            VALUES ($1, $2, 'production', 'net.example.books', '{"aps":{}}', 'c', 10, 0, 1, 5, 'pending', 7,
                'webpush', 'https://push.example.net/x', 'key', 'auth')
            RETURNING id
            """, [.text(apnsID), .text(token)])
        return try #require(rows.first?.int(at: 0))
    }

    private func outbox(_ database: any Database) throws -> [String] {
        try database.execute("SELECT \(Self.columns) FROM push_outbox ORDER BY id").map { row in
            (0..<20).map { row.string(at: $0) ?? row.int(at: $0).map(String.init) ?? "null" }.joined(separator: "|")
        }
    }

    @Test(
        "queued pushes keep every column and their ids, new ids continue past deleted ones, and a second apns-id alike is taken; run again, it changes nothing",
        arguments: Backend.allCases)
    func apnsIDNotUnique(_ backend: Backend) throws {
        let (url, cleanUp) = try backend.makeDatabaseURL()
        defer { cleanUp() }
        let database = try url.open()
        defer { database.close() }
        try Migrator(migrations: HomeportSchema.migrations.filter { $0.version <= 28 }).migrate(database)
        let first = try queue(database, apnsID: "11111111-1111-4111-8111-111111111111", token: "aa")
        let second = try queue(database, apnsID: "22222222-2222-4222-8222-222222222222", token: "bb")
        let third = try queue(database, apnsID: "33333333-3333-4333-8333-333333333333", token: "cc")
        // Before: the same apns-id twice is refused.
        #expect(throws: (any Error).self) {
            try queue(database, apnsID: "11111111-1111-4111-8111-111111111111", token: "dd")
        }
        // The newest two were delivered: the sequence is past every id left.
        try database.execute("DELETE FROM push_outbox WHERE id IN ($1, $2)", [.integer(second), .integer(third)])
        try database.execute(
            "UPDATE push_outbox SET state = 'sending', claimed_by = 'x', claimed_until = 9, last_error = 'e' WHERE id = $1",
            [.integer(first)])
        let before = try outbox(database)
        #expect(before.count == 1)

        try HomeportSchema.migrator.migrate(database)
        #expect(try outbox(database) == before, "every column of the row kept, its id too")
        let next = try queue(database, apnsID: "11111111-1111-4111-8111-111111111111", token: "dd")
        #expect(next > third, "a new push's id continues past the deleted ones: \(next)")

        // The migration runs again when its record is lost: nothing changes.
        let kept = try outbox(database)
        try database.execute("DELETE FROM schema_migrations WHERE version = 29")
        try HomeportSchema.migrator.migrate(database)
        #expect(try outbox(database) == kept)
        #expect(try queue(database, apnsID: "11111111-1111-4111-8111-111111111111", token: "ee") > next)

        // What indexes the table has: its key and the sender's claim order, nothing on apns_id.
        let indexes: [String] =
            switch backend {
            case .sqlite:
                try database.execute("SELECT name FROM pragma_index_list('push_outbox') ORDER BY name").compactMap {
                    $0.string(at: 0)
                }
            case .postgres:
                try database.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'push_outbox' ORDER BY 1")
                    .compactMap { $0.string(at: 0) }
            }
        #expect(indexes == (backend == .sqlite ? ["push_outbox_due"] : ["push_outbox_due", "push_outbox_pkey"]))
    }
}
