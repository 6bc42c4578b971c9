import Foundation
import HomeportLogging
import HomeportStorage
import HomeportTestSupport
import Testing

@testable import HomeportServer

@Suite(
    "The sender's batches overlap: one out while the one before is recorded and the next claimed",
    .tags(.process, .interop))
struct PushSenderPipelineTests {
    /// The outbox's rows by state, for the rows of each account's notification in turn.
    private func states(_ server: AccountsHarness) throws -> [String] {
        try server.application.database.execute("SELECT state FROM push_outbox ORDER BY id").compactMap {
            $0.string(at: 0)
        }
    }

    /// Four accounts with five subscriptions each and a notification each, in turn: four batches
    /// of five for a sender that takes five at a time, the second with one push to a service that
    /// never answers. `body` gets the server, the stand-in, the silent service and the sender,
    /// started once bob's batch is out (ada's recorded, cy's claimed).
    private func heldAtBob(
        _ body: (AccountsHarness, WebPushStandIn, RecordingListener, PushSender) throws -> Void
    ) throws {
        let service = try WebPushStandIn()
        let silent = try RecordingListener(behaviour: .blackhole)
        var settings = try webPushSettings()
        settings.webPush?.timeoutSeconds = 4
        let web = try #require(settings.webPush)
        try withAccounts(.sqlite, push: settings, clockStart: Date()) { server in
            // The application's own sender stops: this test's runs the same outbox, five at a time.
            server.application.sender?.stop()
            let people = ["ada", "bob", "cy", "dan"]
            for (index, person) in people.enumerated() {
                let token = try server.signIn("\(person)@example.com")
                for n in 0..<5 {
                    var subscription = try service.subscribe()
                    if index == 1 && n == 0 { subscription.endpoint = silent.url + "/push/held" }
                    #expect(try server.register(subscription, token: token).status == 200)
                }
            }
            for person in people {
                try server.application.push.notify(
                    ProductNotification(code: ServerCatalogue.testCode, title: "Hello \(person)"),
                    email: "\(person)@example.com")
            }
            #expect(try states(server) == Array(repeating: "pending", count: 20))
            let delivery = try WebPushDelivery(
                settings: web, clock: server.clock, logger: Logger(label: "test", sink: MemoryLogSink()))
            let sender = try PushSender(
                database: server.application.database, transport: PushDispatch([.webpush: delivery]),
                maximumAttempts: 8, clock: server.clock, logger: Logger(label: "test", sink: MemoryLogSink()),
                batchSize: 5)
            sender.start()
            defer { sender.stop() }
            // Bob's batch is out (its silent service holds a request): ada's is recorded (gone), and
            // cy's claimed; a sender that went one batch at a time would have cy's still pending.
            #expect(try eventually(timeout: .seconds(10)) { silent.requests.count == 1 })
            let overlapped = try eventually(timeout: .seconds(3)) {
                try states(server) == Array(repeating: "sending", count: 10) + Array(repeating: "pending", count: 5)
            }
            let seen = try states(server)
            #expect(overlapped, "\(seen)")
            #expect(
                try eventually { try service.messages().delivered.count == 9 },
                "ada's five and bob's other four, not cy's yet")
            try body(server, service, silent, sender)
        }
    }

    @Test(
        "while a batch waits on a slow push service, the batch before is recorded and the next claimed; stopping then gives the claimed one back unsent"
    )
    func overlap() throws {
        try heldAtBob { server, service, _, sender in
            // Stopped while bob's batch is out: it waits for it and records it; cy's, claimed
            // already, goes back unsent (a stop does not wait for a second batch); dan's was never
            // claimed.
            sender.stop()
            #expect(try service.messages().delivered.count == 9, "ada's five and bob's four, and no more")
            #expect(try states(server) == Array(repeating: "pending", count: 11))
            let rows = try server.application.database.execute(
                "SELECT attempts, claimed_by FROM push_outbox ORDER BY id")
            #expect(rows.map { $0.int(at: 0) } == [1] + Array(repeating: 0, count: 10), "only the silent one was tried")
            #expect(rows.allSatisfy { $0.string(at: 1) == nil }, "nothing is left claimed")
        }
    }

    @Test("a batch claimed while the one before was out is not sent when another sender took it over meanwhile")
    func leaseTakenOver() throws {
        try heldAtBob { server, service, _, _ in
            // Cy's batch, claimed while bob's is out: its lease ran out (as behind a slow batch,
            // half a minute later) and another replica claimed it.
            try server.application.database.execute(
                "UPDATE push_outbox SET claimed_by = 'another-replica' WHERE state = 'sending' AND id > 10")
            server.clock.advance(by: 30)
            // Bob's batch ends with the silent service's timeout; then dan's goes, and cy's never.
            #expect(try eventually(timeout: .seconds(15)) { try service.messages().delivered.count == 14 })
            let delivered = try service.messages().delivered.compactMap { $0.payload["aps"] as? [String: Any] }
                .compactMap { ($0["alert"] as? [String: Any])?["title"] as? String }
            #expect(!delivered.contains("Hello cy"), "cy's pushes are the other replica's to send")
            #expect(delivered.filter { $0 == "Hello dan" }.count == 5)
            let cy = try server.application.database.execute(
                "SELECT claimed_by, state FROM push_outbox WHERE id BETWEEN 11 AND 15")
            #expect(
                cy.count == 5
                    && cy.allSatisfy { $0.string(at: 0) == "another-replica" && $0.string(at: 1) == "sending" })
        }
    }
}
