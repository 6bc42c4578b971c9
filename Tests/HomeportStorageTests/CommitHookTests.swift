import Foundation
import HomeportStorage
import HomeportTestSupport
import Testing

@Suite("After a commit: what waits for a transaction runs once its rows can be seen", .tags(.postgres))
struct CommitHookTests {
    @Test(
        "an action runs after COMMIT, when another connection sees the row; never after a rollback; at once outside a transaction",
        arguments: Backend.allCases)
    func afterCommit(backend: Backend) throws {
        try withDatabase(backend) { database, _ in
            try database.execute("CREATE TABLE t (v TEXT)")
            // What the action sees, read on another connection as a woken reader would.
            let seen = LockedBox<[String]>([])
            let look = {
                let rows = (try? database.execute("SELECT v FROM t")) ?? []
                seen.mutate { $0.append(contentsOf: rows.compactMap { $0.string("v") }) }
            }
            try database.transaction { db in
                try db.execute("INSERT INTO t (v) VALUES ('committed')")
                db.afterCommit(look)
                #expect(seen.value.isEmpty, "not before the commit")
            }
            #expect(seen.value == ["committed"], "run once, and the row was visible to it")

            struct Undone: Error {}
            seen.mutate { $0 = [] }
            #expect(throws: Undone.self) {
                try database.transaction { db in
                    try db.execute("INSERT INTO t (v) VALUES ('rolled back')")
                    db.afterCommit(look)
                    throw Undone()
                }
            }
            // The next transaction on a connection does not run what the rolled-back one left.
            try database.transaction { _ in }
            #expect(seen.value.isEmpty, "a rolled-back transaction's action never runs")

            var ranAtOnce = false
            try database.withConnection { db in db.afterCommit { ranAtOnce = true } }
            #expect(ranAtOnce, "outside a transaction there is nothing to wait for")
        }
    }
}
