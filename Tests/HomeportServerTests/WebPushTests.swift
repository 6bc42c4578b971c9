import Foundation
import HomeportCrypto
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportServer

/// Push settings with Web Push on (a fresh VAPID key), and APNs to `apns` when given.
func webPushSettings(apns: APNsStandIn? = nil, allowPrivate: Bool = true) throws -> PushSettings {
    var settings = try apns.map { try pushSettings($0) } ?? PushSettings()
    var web = WebPushSettings(keyPEM: try P256Key.generate().privateKeyPEM, subject: "mailto:ops@example.net")
    // The stand-in push service listens on 127.0.0.1.
    web.allowPrivateEndpoints = allowPrivate
    try settings.enableWebPush(web)
    return settings
}

extension AccountsHarness {
    /// Registers a Web Push subscription for the token's account.
    func register(_ subscription: WebPushStandIn.Subscription, token: String) throws -> RawResponse {
        try app(
            "POST", HomeportPath.pushDevices, token: token,
            json: [
                "provider": "webpush", "endpoint": subscription.endpoint,
                "keys": ["p256dh": subscription.p256dh, "auth": subscription.auth],
            ])
    }
}

@Suite(
    "Web Push: subscriptions, and pushes a stand-in service decrypts and checks", .tags(.process, .postgres, .interop))
struct WebPushTests {
    static let endpoint = "https://push.example.net/wpush/v2/gAAAAABk"

    @Test("a subscription registers by its endpoint and keys, is named webpush:<hash>, and unregisters by that name")
    func registration() throws {
        let receiver = try P256Key.generate().publicKey
        let p256dh = IdentityProof.base64URL(receiver)
        let auth = IdentityProof.base64URL([UInt8](repeating: 9, count: 16))
        try withAccounts(.sqlite, push: try webPushSettings()) { server in
            let ada = try server.signIn("ada@example.com")
            let subscription = WebPushStandIn.Subscription(id: "", endpoint: Self.endpoint, p256dh: p256dh, auth: auth)
            let answer = try server.register(subscription, token: ada)
            #expect(answer.status == 200, "\(answer.text)")
            let name = "webpush:" + Digest.sha256Hex(Self.endpoint)
            #expect(answer.jsonObject?["provider"] as? String == "webpush")
            #expect(answer.jsonObject?["token"] as? String == name)
            #expect(!answer.text.contains(p256dh) && !answer.text.contains(auth), "the keys are not echoed")
            // Padded base64url is the same subscription, stored once.
            _ = try server.register(
                .init(id: "", endpoint: Self.endpoint, p256dh: p256dh + "=", auth: auth + "=="), token: ada)
            #expect(try server.registeredDevices() == [name])
            let stored = try server.application.database.execute(
                "SELECT provider, endpoint, p256dh, auth FROM push_devices")
            #expect(stored.first?.string(at: 0) == "webpush" && stored.first?.string(at: 2) == p256dh)
            let key = try server.app("GET", HomeportPath.pushWebPushKey, token: ada)
            #expect(key.status == 200)
            #expect(key.jsonObject?["publicKey"] as? String == server.application.push.settings.webPushKey)
            #expect(try server.app("GET", HomeportPath.pushWebPushKey).status == 401, "signed in only")

            #expect(try server.app("DELETE", HomeportPath.pushDevice(name), token: ada).status == 204)
            #expect(try server.registeredDevices().isEmpty)
            #expect(try server.app("DELETE", HomeportPath.pushDevice("webpush:xyz"), token: ada).status == 400)
            // The APNs form is unchanged, and says its kind.
            let apns = try server.register(String(repeating: "ab", count: 32), token: ada)
            #expect(apns.status == 200)
            #expect(apns.jsonObject?["provider"] as? String == "apns")
            #expect(apns.jsonObject?["environment"] as? String == "sandbox")
            let apnsToken = String(repeating: "ab", count: 32)
            #expect(try server.app("DELETE", HomeportPath.pushDevice(apnsToken), token: ada).status == 204)
            let logged = server.log.lines.joined(separator: "\n")
            #expect(logged.contains("/api/v1/push/devices/***"), "\(logged.suffix(400))")
            #expect(!logged.contains(apnsToken), "no whole device token in the access log")
        }
    }

    @Test(
        "a bad subscription is a 400 naming its field, and nothing is stored",
        arguments: [
            ("endpoint", "http://push.example.net/x", "endpoint"),
            ("endpoint", "ftp://push.example.net/x", "endpoint"),
            ("endpoint", "https://user:pw@push.example.net/x", "endpoint"),
            ("endpoint", "https://push.example.net/x#f", "endpoint"),
            ("endpoint", "https://push.example.net/" + String(repeating: "a", count: 1100), "endpoint"),
            ("endpoint", nil, "endpoint"),
            ("p256dh", "AAAA", "keys.p256dh"),
            ("p256dh", "off-curve", "keys.p256dh"),
            ("p256dh", "standard-alphabet", "keys.p256dh"),
            ("auth", IdentityProof.base64URL([UInt8](repeating: 1, count: 12)), "keys.auth"),
            ("auth", nil, "keys.auth"),
            ("provider", "gcm", "provider"),
            ("provider", nil, "provider"),
            ("provider", "WEBPUSH", "provider"),
        ] as [(String, String?, String)])
    func refused(name: String, value: String?, field: String) throws {
        var point = try P256Key.generate().publicKey
        var p256dh = IdentityProof.base64URL(point)
        if name == "p256dh", value == "off-curve" {
            point[64] ^= 1
            p256dh = IdentityProof.base64URL(point)
        } else if name == "p256dh", value == "standard-alphabet" {
            p256dh = Data(point).base64EncodedString()
            if !p256dh.contains("+") && !p256dh.contains("/") { p256dh = "+" + p256dh.dropFirst() }
        } else if name == "p256dh", let value {
            p256dh = value
        }
        let given: Any = value ?? NSNull()
        var keys: [String: Any] = ["p256dh": p256dh, "auth": IdentityProof.base64URL([UInt8](repeating: 2, count: 16))]
        if name == "auth" { keys["auth"] = given }
        var body: [String: Any] = ["provider": "webpush", "endpoint": Self.endpoint, "keys": keys]
        if name == "endpoint" || name == "provider" { body[name] = given }
        try withAccounts(.sqlite, push: try webPushSettings()) { server in
            let ada = try server.signIn("ada@example.com")
            let answer = try server.app("POST", HomeportPath.pushDevices, token: ada, json: body)
            #expect(answer.status == 400, "\(name) \(value ?? "null"): \(answer.text)")
            #expect(answer.text.contains("\"\(field)\""), "\(answer.text)")
            #expect(try server.registeredDevices().isEmpty)
        }
    }

    @Test(
        "without --webpush-allow-private-endpoints, an endpoint on this machine or a private network is refused",
        arguments: [
            "http://127.0.0.1:8080/push/1", "https://127.0.0.1/push/1", "https://127.1/push", "https://0x7f.0.0.1/p",
            "https://10.1.2.3/p", "https://172.20.0.1/p", "https://192.168.1.20/p", "https://169.254.169.254/latest",
            "https://100.100.1.1/p", "https://0.0.0.0/p", "https://[::1]/p", "https://[fd00::1]/p",
            "https://[fe80::1]/p", "https://[::ffff:192.168.1.1]/p", "https://localhost/p", "https://LOCALHOST./p",
            "https://ntfy.localhost/p",
        ])
    func privateEndpoints(endpoint: String) throws {
        let point = IdentityProof.base64URL(try P256Key.generate().publicKey)
        let auth = IdentityProof.base64URL([UInt8](repeating: 5, count: 16))
        try withAccounts(.sqlite, push: try webPushSettings(allowPrivate: false)) { server in
            let ada = try server.signIn("ada@example.com")
            let refused = try server.register(.init(id: "", endpoint: endpoint, p256dh: point, auth: auth), token: ada)
            #expect(refused.status == 400 && refused.text.contains("\"endpoint\""), "\(endpoint): \(refused.text)")
            let public_ = try server.register(
                .init(id: "", endpoint: Self.endpoint, p256dh: point, auth: auth), token: ada)
            #expect(public_.status == 200)
        }
    }

    @Test("one subscription is one row however its endpoint is spelled; another account takes it only with its keys")
    func oneSubscription() throws {
        let point = IdentityProof.base64URL(try P256Key.generate().publicKey)
        let auth = IdentityProof.base64URL([UInt8](repeating: 6, count: 16))
        let other = IdentityProof.base64URL([UInt8](repeating: 7, count: 16))
        try withAccounts(.sqlite, push: try webPushSettings()) { server in
            let ada = try server.signIn("ada@example.com")
            let bob = try server.signIn("bob@example.com")
            let name = "webpush:" + Digest.sha256Hex(Self.endpoint)
            // Case, the default port, the host's final dot, an unreserved character percent-encoded.
            for spelling in [
                Self.endpoint, "HTTPS://Push.Example.NET:443/wpush/v2/gAAAAABk",
                "https://push.example.net./wpush/v2/gAAAAABk",
                "https://push.example.net/%77push/v2/g%41AAAABk",
            ] {
                let answer = try server.register(
                    .init(id: "", endpoint: spelling, p256dh: point, auth: auth), token: ada)
                #expect(answer.jsonObject?["token"] as? String == name, "\(spelling): \(answer.text)")
            }
            #expect(try server.registeredDevices() == [name])
            // A dot segment, which libcurl would remove before sending, is refused.
            for spelling in [
                "https://push.example.net/x/../wpush/v2/gAAAAABk", "https://push.example.net/wpush/./v2/gAAAAABk",
                "https://push.example.net/x/%2E%2e/wpush/v2/gAAAAABk",
            ] {
                let answer = try server.register(
                    .init(id: "", endpoint: spelling, p256dh: point, auth: other), token: bob)
                #expect(answer.status == 400, "\(spelling): \(answer.text)")
            }
            #expect(try server.registeredDevices() == [name])
            // Bob knows the endpoint but not the subscription's secret: refused, and ada keeps it.
            let taken = try server.register(
                .init(id: "", endpoint: Self.endpoint, p256dh: point, auth: other), token: bob)
            #expect(taken.status == 409, "\(taken.text)")
            #expect((taken.jsonObject?["error"] as? [String: Any])?["code"] as? String == "subscription_taken")
            // Bob's DELETE of ada's name removes nothing.
            #expect(try server.app("DELETE", HomeportPath.pushDevice(name), token: bob).status == 204)
            let holder = try server.application.database.execute(
                "SELECT u.email FROM push_devices d JOIN users u ON u.id = d.user_id")
            #expect(holder.map { $0.string(at: 0) } == ["ada@example.com"])
            // With the same keys (the same browser, signed in to bob now), it moves.
            let moved = try server.register(
                .init(id: "", endpoint: Self.endpoint, p256dh: point, auth: auth), token: bob)
            #expect(moved.status == 200)
            let now = try server.application.database.execute(
                "SELECT u.email FROM push_devices d JOIN users u ON u.id = d.user_id")
            #expect(now.map { $0.string(at: 0) } == ["bob@example.com"])
        }
    }

    @Test("a push past its expiry is given up, not sent late with TTL 0")
    func expired() throws {
        let service = try WebPushStandIn()
        let subscription = try service.subscribe()
        try withAccounts(.sqlite, push: try webPushSettings(), clockStart: Date()) { server in
            let ada = try server.signIn("ada@example.com")
            #expect(try server.register(subscription, token: ada).status == 200)
            // The sending thread stops first, so that the push waits while its day is made past.
            try #require(server.application.sender).stop()
            try server.application.push.notify(
                ProductNotification(code: ServerCatalogue.testCode, title: "Late"), email: "ada@example.com")
            try server.application.database.execute("UPDATE push_outbox SET expiration = 1")
            try server.drain()
            let rows = try server.outboxRows()
            #expect(
                rows.first?.string(at: 0) == "failed"
                    && rows.first?.string(at: 2) == "expired before it could be delivered")
            #expect(try service.messages().delivered.isEmpty)
        }
    }

    @Test("a server without a VAPID key takes no subscription and has no key to give")
    func off() throws {
        try withAccounts(.sqlite, push: PushSettings(topic: "net.example.books")) { server in
            let ada = try server.signIn("ada@example.com")
            let point = IdentityProof.base64URL(try P256Key.generate().publicKey)
            let answer = try server.register(
                .init(
                    id: "", endpoint: Self.endpoint, p256dh: point,
                    auth: IdentityProof.base64URL([UInt8](repeating: 3, count: 16))),
                token: ada)
            #expect(answer.status == 400 && answer.text.contains("\"provider\""), "\(answer.text)")
            #expect(try server.app("GET", HomeportPath.pushWebPushKey, token: ada).status == 404)
        }
    }

    @Test(
        "one notification reaches an APNs device and two subscriptions once each, decrypted, signed, with this server's s",
        arguments: Backend.allCases)
    func delivers(backend: Backend) throws {
        let apns = try APNsStandIn()
        let service = try WebPushStandIn()
        let phone = try service.subscribe()
        let browser = try service.subscribe()
        try withAccounts(backend, push: try webPushSettings(apns: apns), clockStart: Date()) { server in
            let ada = try server.signIn("ada@example.com")
            #expect(try server.register(phone, token: ada).status == 200)
            #expect(try server.register(browser, token: ada).status == 200)
            #expect(try server.register(String(repeating: "cd", count: 32), token: ada).status == 200)
            let delivery = try server.application.push.notify(
                ProductNotification(code: ServerCatalogue.testCode, title: "Hello", thread: "chat:42"),
                email: "ada@example.com")
            #expect(delivery.queued == 3)
            try server.drain()
            #expect(try eventually { try service.messages().delivered.count == 2 && apns.requests().count == 1 })
            usleep(200_000)
            let (delivered, refused) = try service.messages()
            #expect(refused.isEmpty, "\(refused)")
            #expect(delivered.map(\.id).sorted() == [phone.id, browser.id].sorted(), "each subscription once")
            let identity = try RawHTTP.request(port: server.port, path: HomeportPath.serverIdentity)
            let instance = try #require(identity.jsonObject?["instanceId"] as? String)
            for message in delivered {
                let appData = try #require(message.payload["homeport"] as? [String: Any])
                #expect(appData["s"] as? String == instance)
                #expect((message.payload["aps"] as? [String: Any])?["thread-id"] as? String == "\(instance):chat:42")
                #expect(message.key == server.application.push.settings.webPushKey, "signed with the server's key")
                #expect(message.subject == "mailto:ops@example.net")
                #expect(message.urgency == "high")
                #expect((86000...86400).contains(message.ttl))
                #expect(message.topic?.count == 32, "the thread as topic")
            }
            #expect(try server.outboxRows().isEmpty)
        }
    }

    @Test(
        "a stored key that is no point on the curve is found as its message is encrypted: that push is given up and never sent, the others go"
    )
    func keyOffTheCurve() throws {
        let service = try WebPushStandIn()
        let good = try service.subscribe()
        let spoiled = try service.subscribe()
        try withAccounts(.sqlite, push: try webPushSettings(), clockStart: Date()) { server in
            let ada = try server.signIn("ada@example.com")
            for subscription in [good, spoiled] { #expect(try server.register(subscription, token: ada).status == 200) }
            server.application.sender?.stop()
            try server.pushToAda()
            // 0x04 and 64 bytes: the length of a point, not one on P-256 (registration refuses it;
            // here the row was changed after).
            let offCurve = IdentityProof.base64URL([4] + [UInt8](repeating: 1, count: 64))
            try server.application.database.execute(
                "UPDATE push_outbox SET p256dh = $1 WHERE endpoint = $2", [.text(offCurve), .text(spoiled.endpoint)])
            try server.drain()
            #expect(try service.messages().delivered.map(\.id) == [good.id])
            #expect(try service.messages().refused.isEmpty, "nothing reached the service for the spoiled one")
            let rows = try server.application.database.execute("SELECT state, last_error FROM push_outbox")
            #expect(rows.count == 1)
            #expect(rows.first?.string(at: 0) == "failed")
            #expect(rows.first?.string(at: 1) == "the subscription's keys are not usable")
        }
    }

    @Test("410 and 404 remove the subscription; 429 waits for Retry-After; 413 and 400 are given up")
    func outcomes() throws {
        let service = try WebPushStandIn()
        let gone = try service.subscribe()
        let missing = try service.subscribe()
        let busy = try service.subscribe()
        let large = try service.subscribe()
        let refusing = try service.subscribe()
        try service.answer(gone, with: [410])
        try service.answer(missing, with: [404])
        try service.answer(busy, with: [429], retryAfter: 600)
        try service.answer(large, with: [413])
        try service.answer(refusing, with: [400])
        try withAccounts(.sqlite, push: try webPushSettings(), clockStart: Date()) { server in
            let ada = try server.signIn("ada@example.com")
            for subscription in [gone, missing, busy, large, refusing] {
                #expect(try server.register(subscription, token: ada).status == 200)
            }
            try server.pushToAda()
            try server.drain()
            let names = Set([busy, large, refusing].map { "webpush:" + Digest.sha256Hex($0.endpoint) })
            #expect(Set(try server.registeredDevices()) == names, "410 and 404 removed theirs, and only theirs")
            let rows = try server.application.database.execute(
                "SELECT state, next_attempt_at, last_error FROM push_outbox ORDER BY id")
            #expect(rows.compactMap { $0.string(at: 0) }.sorted() == ["failed", "failed", "pending"], "\(rows)")
            let waiting = try #require(rows.first { $0.string(at: 0) == "pending" })
            #expect((waiting.int(at: 1) ?? 0) >= server.clock.unixSeconds + 600, "not before Retry-After")
            // When it is due, the busy service takes it.
            try server.makeDue()
            try server.drain()
            #expect(try service.messages().delivered.map(\.id) == [busy.id])
            let lines = server.log.lines.joined(separator: "\n")
            for subscription in [gone, missing, busy, large, refusing] {
                #expect(!lines.contains(subscription.endpoint), "no endpoint in the log")
                #expect(!lines.contains(subscription.auth), "no key in the log")
            }
        }
    }

    @Test(
        "a push service that never answers holds only its own request: the other pushes go at once, and its own is retried"
    )
    func silentService() throws {
        let service = try WebPushStandIn()
        let good = try service.subscribe()
        let silent = try RecordingListener(behaviour: .blackhole)
        var settings = try webPushSettings()
        settings.webPush?.timeoutSeconds = 5
        try withAccounts(.sqlite, push: settings, clockStart: Date()) { server in
            let ada = try server.signIn("ada@example.com")
            // The silent one first: a sender that went one by one would wait on it before the other.
            let tarpit = WebPushStandIn.Subscription(
                id: "", endpoint: silent.url + "/push/1", p256dh: good.p256dh, auth: good.auth)
            #expect(try server.register(tarpit, token: ada).status == 200)
            #expect(try server.register(good, token: ada).status == 200)
            try server.pushToAda()
            let sender = try #require(server.application.sender)
            let finished = Flag()
            Thread.detachNewThread {
                _ = try? sender.drainOnce()
                finished.set()
            }
            #expect(try eventually { try service.messages().delivered.count == 1 })
            #expect(!finished.isSet, "the other push went while the silent service still held its own")
            #expect(eventually(timeout: .seconds(30)) { finished.isSet })
            let rows = try server.outboxRows()
            #expect(
                rows.count == 1 && rows.first?.string(at: 0) == "pending", "the silent one's push waits to go again")
        }
    }

    @Test(
        "to a push service that speaks HTTP/2 over TLS, a batch goes as streams of one connection; its CA is trusted only when given"
    )
    func http2() throws {
        let certificates = try TestCertificates()
        let service = try NginxPushService(certificates: certificates)
        let receiver = IdentityProof.base64URL(try P256Key.generate().publicKey)
        let auth = IdentityProof.base64URL([UInt8](repeating: 3, count: 16))
        for trusted in [false, true] {
            var settings = try webPushSettings()
            if trusted { settings.webPush?.extraCA = try String(contentsOfFile: certificates.caFile, encoding: .utf8) }
            try withAccounts(.sqlite, push: settings, clockStart: Date()) { server in
                let ada = try server.signIn("ada@example.com")
                for n in 0..<20 {
                    let subscription = WebPushStandIn.Subscription(
                        id: "", endpoint: "https://localhost:\(service.port)/push/\(trusted)/\(n)", p256dh: receiver,
                        auth: auth)
                    #expect(try server.register(subscription, token: ada).status == 200)
                }
                try server.pushToAda()
                let sender = try #require(server.application.sender)
                _ = try sender.drainOnce()
                let rows = try server.outboxRows()
                if trusted {
                    #expect(rows.isEmpty, "every push delivered")
                    // nginx logs a request once it has answered it: the last line may come a moment
                    // after the sender had its answer.
                    #expect(eventually { service.requests().filter { $0.contains("/push/true/") }.count == 20 })
                    let requests = service.requests().filter { $0.contains("/push/true/") }
                    #expect(requests.count == 20)
                    #expect(requests.allSatisfy { $0.hasPrefix("HTTP/2.0 POST") }, "\(requests)")
                    let connections = Set(requests.compactMap { $0.split(separator: " ").last })
                    #expect(connections.count == 1, "one connection carried them all: \(connections)")
                } else {
                    #expect(rows.count == 20 && rows.allSatisfy { $0.string(at: 0) == "pending" }, "untrusted: kept")
                    #expect(service.requests().isEmpty, "no request reached a service it does not trust")
                }
            }
        }
    }

    @Test(
        "a push service is known by its endpoint's origin, read as the server keeps endpoints",
        arguments: [
            ("https://push.example.net/wpush/v2/gAAAA", "https://push.example.net"),
            ("https://push.example.net:8443/x?y#z", "https://push.example.net:8443"),
            ("https://[2001:db8::1]:8443/up/1", "https://[2001:db8::1]:8443"),
            ("https://push.example.net", "https://push.example.net"),
            ("http://192.168.1.9:2586/upAbc?up=1", "http://192.168.1.9:2586"),
        ])
    func origin(endpoint: String, origin: String) {
        #expect(WebPushSubscription.origin(of: WebPushSubscription.normalized(endpoint)) == origin)
    }

    @Test(
        "an endpoint is kept in RFC 3986's normal form: one spelling for what a push service reads as one",
        arguments: [
            ("HTTPS://Push.Example.NET.:443/%77push/%7e/%2fx?a=%2f%41", "https://push.example.net/wpush/~/%2Fx?a=%2FA"),
            ("http://192.168.1.9:2586/upAbc?up=1", "http://192.168.1.9:2586/upAbc?up=1"),
        ])
    func normalForm(endpoint: String, normal: String) {
        #expect(WebPushSubscription.normalized(endpoint) == normal)
        #expect(WebPushSubscription.normalized(normal) == normal, "normal already")
    }

    @Test("a name's final dot is the name: localhost. is as private as localhost; a stray % is refused")
    func finalDot() {
        for endpoint in [
            "https://push.example.net/a%2", "https://push.example.net/a%zz", "https://push.example.net/a%",
        ] {
            #expect(WebPushSubscription.endpointProblem(endpoint, allowPrivate: false) != nil, "\(endpoint)")
        }
        #expect(WebPushSubscription.endpointProblem("https://localhost./x", allowPrivate: false) != nil)
        #expect(WebPushSubscription.endpointProblem("https://127.0.0.1./x", allowPrivate: false) != nil)
        #expect(WebPushSubscription.endpointProblem("https://push.example.net./x", allowPrivate: false) == nil)
    }
}

/// A flag one thread sets and another reads.
private final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    func set() { lock.withLock { value = true } }
    var isSet: Bool { lock.withLock { value } }
}
