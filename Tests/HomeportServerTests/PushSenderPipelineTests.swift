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

    @Test(
        "while a batch waits on a slow push service, the batch before is recorded and the next claimed; stopping sends and records what was claimed, and claims no more"
    )
    func overlap() throws {
        let service = try WebPushStandIn()
        let silent = try RecordingListener(behaviour: .blackhole)
        var settings = try webPushSettings()
        settings.webPush?.timeoutSeconds = 4
        let web = try #require(settings.webPush)
        try withAccounts(.sqlite, push: settings, clockStart: Date()) { server in
            // The application's own sender stops: this test's runs the same outbox, five at a time.
            server.application.sender?.stop()
            // Four accounts, five subscriptions each, one notification each, in turn: four batches
            // of five, the second with one push to a service that never answers.
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
                    email: "\(person)@example.com", code: ServerCatalogue.testCode, title: "Hello \(person)")
            }
            #expect(try states(server) == Array(repeating: "pending", count: 20))
            let delivery = try WebPushDelivery(
                settings: web, clock: server.clock, logger: Logger(label: "test", sink: MemoryLogSink()))
            let sender = try PushSender(
                database: server.application.database, transport: PushDispatch([.webpush: delivery]),
                maximumAttempts: 8, clock: server.clock, logger: Logger(label: "test", sink: MemoryLogSink()),
                batchSize: 5)
            sender.start()
            // Bob's batch is out (its silent service holds a request): ada's is recorded (gone), and
            // cy's claimed; a sender that went one batch at a time would have cy's still pending.
            #expect(try eventually(timeout: .seconds(10)) { silent.requests.count == 1 })
            let overlapped = try eventually(timeout: .seconds(3)) {
                try states(server) == Array(repeating: "sending", count: 10) + Array(repeating: "pending", count: 5)
            }
            let seen = try states(server)
            #expect(overlapped, "\(seen)")
            #expect(try service.messages().delivered.count == 9, "ada's five and bob's other four, not cy's yet")
            // Stopped while bob's batch is out: it waits for it, sends cy's (claimed already), and
            // leaves dan's for the next run.
            sender.stop()
            #expect(try service.messages().delivered.count == 14, "ada's five, bob's four, cy's five")
            #expect(
                try states(server) == ["pending"] + Array(repeating: "pending", count: 5),
                "the silent one's push waits to go again; dan's were never claimed")
            let dan = try server.application.database.execute("SELECT attempts FROM push_outbox ORDER BY id")
            #expect(dan.map { $0.int(at: 0) } == [1, 0, 0, 0, 0, 0])
        }
    }
}
