import Foundation
import HomeportAPNs
import HomeportCrypto

#if canImport(Glibc)
    import CEpoll
    import Glibc
#endif

// Benchmark (not a test), run by benchmarks/push:
//   homeport-push-benchmark sender URL CA_FILE KEY_FILE DEVICE COUNT BATCH
//     sends COUNT pushes to DEVICE through APNsClient (HTTP/2, one connection), BATCH at a time,
//     and prints "sender <requests/s> <delivered>".
//   homeport-push-benchmark streams PORT TOKEN COUNT SERVER_PID -- COMMAND…
//     opens COUNT in-app streams with the session TOKEN, runs COMMAND (which notifies the
//     account) once all are open, and prints "streams <seconds until every stream had the event>
//     <server RSS before, KiB> <server RSS with the streams open, KiB>".
//   homeport-push-benchmark webpush-encrypt COUNT
//     encrypts a 300-byte payload COUNT times for one subscription (RFC 8291: a fresh key pair,
//     ECDH, HKDF, AES-128-GCM) and prints "webpush-encrypt <µs per message>".

let arguments = Array(CommandLine.arguments.dropFirst())

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data((message + "\n").utf8))
    exit(2)
}

func sender(_ arguments: [String]) throws {
    guard arguments.count == 6, let count = Int(arguments[4]), let batch = Int(arguments[5]) else {
        fail("usage: homeport-push-benchmark sender URL CA_FILE KEY_FILE DEVICE COUNT BATCH")
    }
    let client = APNsClient(
        configuration: .init(productionURL: arguments[0], sandboxURL: arguments[0], caFile: arguments[1]))
    let key = try ES256Key(pem: try String(contentsOfFile: arguments[2], encoding: .utf8))
    let token = try ProviderToken.mint(
        key: key, keyID: "KEY1234567", teamID: "TEAM123456", issuedAt: Int64(Date().timeIntervalSince1970))
    let random = SystemRandom()
    let payload = Data(#"{"aps":{"alert":{"title":"Benchmark"},"mutable-content":1},"homeport":{"c":"b:c"}}"#.utf8)
    func requests(_ n: Int) -> [APNsRequest] {
        (0..<n).map { _ in
            APNsRequest(
                apnsID: (try? random.uuid().uuidString.lowercased()) ?? "", deviceToken: arguments[3],
                topic: "net.example.books",
                payload: payload, expiration: 0, environment: .production)
        }
    }
    _ = client.send(requests(100), authorization: token.jwt)  // connect and warm up
    // The batches are made before the clock starts, as h2load's requests are: what is timed is
    // the sender (its frames, the connection, the answers), not the benchmark's random ids.
    var batches: [[APNsRequest]] = []
    var left = count
    while left > 0 {
        batches.append(requests(min(batch, left)))
        left -= batches[batches.count - 1].count
    }
    var delivered = 0
    let start = ContinuousClock.now
    for requests in batches {
        delivered += client.send(requests, authorization: token.jwt).filter { $0.status == 200 }.count
    }
    let elapsed = ContinuousClock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    print("sender \(Int(Double(count) / seconds)) \(delivered)")
}

#if !canImport(Glibc)
    func streams(_ arguments: [String]) throws {
        fail("streams: Linux only (epoll, and the server's memory from /proc)")
    }
#else
    func streams(_ arguments: [String]) throws {
        guard arguments.count >= 6, let port = Int(arguments[0]), let count = Int(arguments[2]), arguments[4] == "--"
        else { fail("usage: homeport-push-benchmark streams PORT TOKEN COUNT SERVER_PID -- COMMAND…") }
        func residentKiB() -> Int {
            let status = (try? String(contentsOfFile: "/proc/\(arguments[3])/status", encoding: .utf8)) ?? ""
            let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
            return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
        }
        let before = residentKiB()
        let request = "GET /api/v1/notifications/stream HTTP/1.1\r\nHost: x\r\nX-Session-Token: \(arguments[1])\r\n\r\n"
        var sockets: [Int32] = []
        var received = [String](repeating: "", count: count)
        for _ in 0..<count {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            guard connected else { fail("connection \(sockets.count) refused: raise --max-connections") }
            _ = request.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
            sockets.append(fd)
        }
        var buffer = [UInt8](repeating: 0, count: 65536)
        // epoll, not poll: a poll over every socket per wakeup costs O(streams) each time, and with
        // 20,000 streams the load generator, not the server, was what the figure measured.
        let epoll = epoll_create1(0)
        guard epoll >= 0 else { fail("epoll_create1 failed") }
        for (index, fd) in sockets.enumerated() {
            var event = epoll_event()
            event.events = EPOLLIN.rawValue
            event.data.u64 = UInt64(index)
            guard epoll_ctl(epoll, EPOLL_CTL_ADD, fd, &event) == 0 else { fail("epoll_ctl failed") }
        }
        var events = [epoll_event](repeating: epoll_event(), count: 1024)
        /// Reads whatever is there until every stream's text contains `needle`; false after `timeout`.
        func wait(for needle: String, timeout: Double) -> Bool {
            var pending = Set(sockets.indices.filter { !received[$0].contains(needle) })
            let deadline = Date().addingTimeInterval(timeout)
            while !pending.isEmpty && Date() < deadline {
                let ready = epoll_wait(epoll, &events, Int32(events.count), 100)
                guard ready > 0 else { continue }
                for event in events[0..<Int(ready)] {
                    let index = Int(event.data.u64)
                    let read = recv(sockets[index], &buffer, buffer.count, Int32(MSG_DONTWAIT))
                    if read > 0 { received[index] += String(decoding: buffer[0..<read], as: UTF8.self) }
                    if received[index].contains(needle) { pending.remove(index) }
                }
            }
            return pending.isEmpty
        }
        guard wait(for: ": connected", timeout: 120) else { fail("not every stream opened") }
        let open = residentKiB()
        let command = Process()
        command.executableURL = URL(fileURLWithPath: arguments[5])
        command.arguments = Array(arguments.dropFirst(6))
        command.standardOutput = FileHandle.nullDevice
        let start = ContinuousClock.now
        try command.run()
        guard wait(for: "event: notification", timeout: 60) else { fail("not every stream got the event") }
        let elapsed = ContinuousClock.now - start
        command.waitUntilExit()
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        print("streams \(seconds) \(before) \(open)")
        sockets.forEach { close($0) }
        close(epoll)
    }
#endif

func webPushEncrypt(_ arguments: [String]) throws {
    guard arguments.count == 1, let count = Int(arguments[0]), count > 0 else {
        fail("usage: homeport-push-benchmark webpush-encrypt COUNT")
    }
    let subscription = try P256Key.generate().publicKey
    let auth = try SystemRandom().bytes(16)
    let payload = [UInt8](repeating: 0x61, count: 300)
    var bytes = 0
    let start = ContinuousClock.now
    for _ in 0..<count {
        bytes &+= try WebPushContent.encrypt(payload, p256dh: subscription, auth: auth).count
    }
    let elapsed = ContinuousClock.now - start
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    guard bytes > 0 else { fail("nothing encrypted") }
    print("webpush-encrypt \(seconds * 1e6 / Double(count))")
}

do {
    switch arguments.first {
    case "sender": try sender(Array(arguments.dropFirst()))
    case "streams": try streams(Array(arguments.dropFirst()))
    case "webpush-encrypt": try webPushEncrypt(Array(arguments.dropFirst()))
    default: fail("usage: homeport-push-benchmark sender|streams|webpush-encrypt …")
    }
} catch {
    fail("homeport-push-benchmark: \(error)")
}
