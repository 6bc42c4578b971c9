import Foundation
import HomeportTestSupport
import Testing

@testable import HomeportStorage

@Suite("IN lists in chunks: every value, and ten lengths of statement", .tags(.postgres))
struct SQLListTests {
    private static let lengths: Set<Int> = [1, 2, 4, 8, 16, 32, 64, 128, 256, 500]

    @Test("every count from 0 to 1,200: the values in order, each chunk's last repeated to one of ten lengths")
    func chunkShapes() {
        for count in 0...1_200 {
            let values = Array(0..<count)
            let chunks = SQLList.chunks(values, first: 3)
            #expect(chunks.count == (count + 499) / 500)
            for (index, chunk) in chunks.enumerated() {
                let own = Array(values[(index * 500)..<min(index * 500 + 500, count)])
                #expect(Self.lengths.contains(chunk.values.count), "\(count): a list of \(chunk.values.count)")
                #expect(Array(chunk.values.prefix(own.count)) == own)
                #expect(chunk.values.dropFirst(own.count).allSatisfy { $0 == own.last }, "filled with its own last")
                #expect(chunk.placeholders == (3..<(3 + chunk.values.count)).map { "$\($0)" }.joined(separator: ", "))
            }
        }
    }

    @Test(
        "deleting lists of every size from 1 to 600 removes exactly the rows named, with at most ten statements kept",
        arguments: Backend.allCases)
    func fewStatements(backend: Backend) throws {
        try withDatabase(backend, options: DatabaseOptions(maximumConnections: 1)) { database, _ in
            try database.execute("CREATE TABLE items (id BIGINT PRIMARY KEY)")
            try database.transaction { db in
                for id in 1...2_000 { try db.execute("INSERT INTO items (id) VALUES ($1)", [.integer(Int64(id))]) }
            }
            var left = Set<Int64>(1...2_000)
            var rng = SystemRandomNumberGenerator()
            for size in 1...600 {
                // Rows there and rows not: each list is named once, in any order.
                let named = Set((0..<size).map { _ in Int64.random(in: 1...5_000, using: &rng) })
                for (chunk, placeholders) in SQLList.chunks(Array(named)) {
                    try database.execute("DELETE FROM items WHERE id IN (\(placeholders))", chunk.map(SQLValue.integer))
                }
                left.subtract(named)
            }
            let remaining = try database.execute("SELECT id FROM items").compactMap { $0.int(at: 0) }
            #expect(Set(remaining) == left, "exactly the rows named are gone")
            let deletes: Int
            switch backend {
            case .sqlite:
                deletes =
                    try database.withConnection {
                        ($0 as? SQLiteConnection)?.preparedStatements.filter { $0.hasPrefix("DELETE FROM items") }.count
                    } ?? -1
            case .postgres:
                deletes = Int(
                    try database.execute(
                        "SELECT count(*) AS n FROM pg_prepared_statements WHERE statement LIKE 'DELETE FROM items%'"
                    ).first?.int("n") ?? -1)
            }
            #expect((1...Self.lengths.count).contains(deletes), "\(deletes) statements kept")
        }
    }
}
