import BookOrbit
import HomeportServer
import HomeportTesting
import Testing

/// A loan's life, as the guide shows it: BookOrbit's server in this process, its clock moved.
@Suite("A loan, in process")
struct LoanTests {
    @Test("a loan is ready once its time comes, and its owner hears it once: on the stream and at each device")
    func loanReady() throws {
        try Product.bookOrbit.test { app in
            let ada = try app.signUp("ada@example.com")
            let device = try app.registerDevice(for: ada)
            let book = try #require(
                try app.post("/api/v1/books", json: ["title": "Kindred"], as: ada).object?["id"] as? Int)
            let started = try app.post("/api/v1/books/\(book)/loan", as: ada)
            #expect(started.status == 202)
            let loan = try #require((started.object?["loan"] as? [String: Any])?["id"] as? Int)
            #expect(try app.post("/api/v1/books/\(book)/loan", as: ada).status == 409, "one loan per book")

            try app.run(task: "loans")
            #expect(try app.notifications(of: ada).isEmpty, "not before its time")
            app.clock.advance(by: .seconds(60))
            try app.run(task: "loans")
            try app.run(task: "loans")
            let heard = try app.notifications(of: ada)
            #expect(heard.map(\.code) == [BookOrbitCode.loanReady], "once")
            #expect(heard.first?.thread == "loan:\(loan)" && heard.first?.objectID == Int64(loan))
            let pushes = try app.pushes(to: ada)
            #expect(pushes.map(\.deviceToken) == [device])
            #expect(
                pushes.first?.appData()?["s"] as? String == (try app.services.instanceID()).description)
            let shown = try app.get("/api/v1/books/\(book)/loan", as: ada).object?["loan"] as? [String: Any]
            #expect(shown?["state"] as? String == "ready")
        }
    }
}
