import Foundation
import HomeportStorage
import HomeportTestSupport
import Testing

@testable import HomeportServer

/// Runs statements on `base`; right after the first one that reads the outbox, runs `meanwhile`
/// (another writer, between a claim's read and its write).
private final class Interleaving: SQLExecutor {
    let base: any SQLExecutor
    var meanwhile: (() throws -> Void)?
    var dialect: SQLDialect { base.dialect }

    init(_ base: any SQLExecutor, meanwhile: @escaping () throws -> Void) {
        self.base = base
        self.meanwhile = meanwhile
    }

    func execute(_ sql: String, _ parameters: [SQLValue]) throws -> [Row] {
        let rows = try base.execute(sql, parameters)
        if sql.hasPrefix("SELECT"), sql.contains("FROM push_outbox"), let meanwhile {
            self.meanwhile = nil
            try meanwhile()
        }
        return rows
    }
}

@Suite("The outbox's claims, on SQLite and PostgreSQL", .tags(.postgres))
struct PushOutboxClaimTests {
    private func item(_ n: Int) -> OutboxItem {
        OutboxItem(
            apnsID: UUID().uuidString.lowercased(), deviceToken: String(format: "%064x", n), environment: .production,
            topic: "net.example.books", payload: #"{"aps":{}}"#, collapseID: nil, priority: 10, expiration: 0,
            provider: .apns, webPush: nil, fcmToken: nil)
    }

    @Test(
        "a claim takes rows whose lease ran out, then due rows (most overdue first, then oldest), up to its limit; never a row not due, held, failed or of another service",
        arguments: Backend.allCases)
    func claimOrder(backend: Backend) throws {
        try withMigratedDatabase(backend) { database, _ in
            let now: Int64 = 10_000
            let outbox = PushOutbox(database)
            for n in 1...9 { try outbox.enqueue(item(n), now: now - 100) }
            let ids = try database.execute("SELECT id FROM push_outbox ORDER BY id").compactMap { $0.int("id") }
            #expect(ids.count == 9)
            func set(_ index: Int, _ assignments: String) throws {
                try database.execute("UPDATE push_outbox SET \(assignments) WHERE id = $1", [.integer(ids[index])])
            }
            // Rows 0 and 1 are due as enqueued; 2 was retried and is due since longer; 3 is not due yet.
            try set(2, "next_attempt_at = \(now - 500)")
            try set(3, "next_attempt_at = \(now + 60)")
            // 4's lease ran out (a sender that died), 5's did not, 6 was given up, 7 goes by FCM.
            try set(4, "state = 'sending', claimed_by = 'dead', claimed_until = \(now - 1)")
            try set(5, "state = 'sending', claimed_by = 'alive', claimed_until = \(now + 30)")
            try set(6, "state = 'failed'")
            try set(7, "provider = 'fcm'")
            // 8, enqueued last, is due as 0 and 1 are.
            // A batch is sent all at once: which rows it holds is the rule, not their order in it.
            func claimed(limit: Int) throws -> Set<Int64> {
                Set(
                    try database.transaction {
                        try PushOutbox($0).claim("me", limit: limit, now: now, lease: 90, dialect: database.dialect)
                    }.map(\.id))
            }
            #expect(try claimed(limit: 1) == [ids[4]], "the lapsed lease first")
            #expect(try claimed(limit: 2) == [ids[2], ids[0]], "then the most overdue, then the oldest")
            #expect(try claimed(limit: 10) == [ids[1], ids[8]])
            #expect(try claimed(limit: 10).isEmpty, "what is left is not due, held, failed or another service's")
            let mine = try database.execute("SELECT id FROM push_outbox WHERE claimed_by = 'me' ORDER BY id")
            #expect(mine.compactMap { $0.int("id") } == [ids[0], ids[1], ids[2], ids[4], ids[8]])
            #expect(
                try database.execute("SELECT claimed_by FROM push_outbox WHERE id = $1", [.integer(ids[5])])
                    .first?.string("claimed_by") == "alive")
            // Without lapsed leases: 4's would be taken first, were it not for the flag.
            try set(4, "state = 'sending', claimed_by = 'dead', claimed_until = \(now - 1)")
            let due = try database.transaction {
                try PushOutbox($0).claim("me", limit: 10, now: now, lease: 90, dialect: database.dialect, lapsed: false)
            }
            #expect(due.isEmpty, "nothing else is due")
        }
    }

    @Test(
        "a claim outside a transaction, another sender claiming between its read and its write, returns no row of the other's"
    )
    func readThenSetAsksAgain() throws {
        try withMigratedDatabase(.sqlite) { database, _ in
            let now: Int64 = 10_000
            for n in 1...4 { try PushOutbox(database).enqueue(item(n), now: now - 100) }
            let ids = try database.execute("SELECT id FROM push_outbox ORDER BY id").compactMap { $0.int(at: 0) }
            // Not in a transaction (a caller that forgot): another sender takes the second row
            // after this claim read it.
            let racing = Interleaving(database) {
                try database.execute(
                    "UPDATE push_outbox SET state = 'sending', claimed_by = 'other', claimed_until = $1 WHERE id = $2",
                    [.integer(now + 90), .integer(ids[1])])
            }
            let claimed = try PushOutbox(racing).claim(
                "me", limit: 10, now: now, lease: 90, dialect: database.dialect, lapsed: false)
            #expect(Set(claimed.map(\.id)) == [ids[0], ids[2], ids[3]], "the other's row is not returned")
            #expect(
                try database.execute("SELECT claimed_by FROM push_outbox WHERE id = $1", [.integer(ids[1])])
                    .first?.string(at: 0) == "other")
        }
    }

    @Test("on SQLite a claim's writes find their rows by id, not through the due index that spans every due row")
    func claimWritesByID() throws {
        try withMigratedDatabase(.sqlite) { database, url in
            guard case .sqlite(let path) = url else { return }
            let now: Int64 = 10_000
            for n in 1...20 { try PushOutbox(database).enqueue(item(n), now: now - 100) }
            // One row of each condition: a lapsed lease, and due rows.
            try database.execute(
                """
                UPDATE push_outbox SET state = 'sending', claimed_by = 'dead', claimed_until = $1
                WHERE id = (SELECT MIN(id) FROM push_outbox)
                """, [.integer(now - 1)])
            StatementLog.start(source: path)
            let claimed = try database.transaction {
                try PushOutbox($0).claim("me", limit: 10, now: now, lease: 90, dialect: database.dialect)
            }
            let updates = StatementLog.stop(source: path).filter { $0.sql.contains("UPDATE push_outbox") }
            #expect(claimed.count == 10)
            #expect(updates.count == 2, "one for the lapsed row, one for the due ones")
            for update in updates {
                // Asked again in the write, the read's condition could lead SQLite to the index of
                // every due row (a hundred thousand in a drain) instead of the ids.
                let plan = try database.execute("EXPLAIN QUERY PLAN " + update.sql, update.parameters)
                    .compactMap { $0.string("detail") }
                #expect(
                    plan.contains { $0.contains("INTEGER PRIMARY KEY") }
                        && !plan.contains { $0.contains("push_outbox_due") }, "\(plan)")
            }
        }
    }

    @Test("a claim of a thousand sets every row it returns, and only those", arguments: Backend.allCases)
    func largeClaim(backend: Backend) throws {
        try withMigratedDatabase(backend) { database, _ in
            let now: Int64 = 10_000
            try database.transaction { db in
                for n in 1...1_200 { try PushOutbox(db).enqueue(item(n), now: now - 100) }
            }
            let first = try database.transaction {
                try PushOutbox($0).claim("me", limit: 1_000, now: now, lease: 90, dialect: database.dialect)
            }
            #expect(first.count == 1_000)
            // The first thousand enqueued, whole (a batch is sent at once: in no particular order).
            #expect(Set(first.map(\.deviceToken)) == Set((1...1_000).map { String(format: "%064x", $0) }))
            #expect(first.allSatisfy { $0.payload == #"{"aps":{}}"# && $0.topic == "net.example.books" })
            let held = try database.execute(
                "SELECT id FROM push_outbox WHERE state = 'sending' AND claimed_by = 'me' AND claimed_until = $1",
                [.integer(now + 90)]
            ).compactMap { $0.int(at: 0) }
            #expect(Set(held) == Set(first.map(\.id)), "each row returned is claimed, and no other")
            let rest = try database.transaction {
                try PushOutbox($0).claim("other", limit: 1_000, now: now, lease: 90, dialect: database.dialect)
            }
            #expect(rest.count == 200)
            #expect(Set(rest.map(\.id)).isDisjoint(with: held))
        }
    }
}
