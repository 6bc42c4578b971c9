import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension RecordingListener {
    /// Relays one client connection to the server on 127.0.0.1:`port`, request by request (each
    /// framed by its head and `Content-Length`), with `fault`; a thread copies the server's
    /// answers back as they come. `buffered` is what the client has sent so far. A held request
    /// keeps the connection open and silent until the listener stops.
    func relay(_ client: Int32, connection: Int, buffered: [UInt8], to port: Int, fault: RelayFault) {
        guard let upstream = try? RawHTTP.connect(port: port, timeout: 3600) else { return }
        lock.withLock { open.append(upstream) }
        let answersDone = DispatchSemaphore(value: 0)
        Thread.detachNewThread { [self] in
            var chunk = [UInt8](repeating: 0, count: 16_384)
            while true {
                let count = recv(upstream, &chunk, chunk.count, 0)
                guard count > 0, lock.withLock({ running }), RawHTTP.send(client, Array(chunk[0..<count])) else {
                    break
                }
            }
            // The server closed: so does the relay, towards the client (unless the listener stopped
            // and closed it already).
            lock.withLock {
                if running { _ = shutdown(client, Int32(SHUT_WR)) }
            }
            answersDone.signal()
        }
        var buffer = buffered
        var chunk = [UInt8](repeating: 0, count: 16_384)
        var hold = false
        relaying: while true {
            while let request = Self.nextRequest(in: buffer) {
                let isProbe = Self.route(of: request.head) == ("GET", "/api/v1/server-identity")
                switch fault {
                case .hangsOnAPI where !isProbe:
                    hold = true
                    break relaying
                case .dropsAPI where !isProbe:
                    break relaying
                case .late(let seconds):
                    usleep(useconds_t(seconds * 1_000_000))
                case .holdsFirst(let path) where Self.route(of: request.head).path == path:
                    let first = lock.withLock {
                        defer { firstCame = true }
                        if !firstCame { firstHeld = true }
                        return !firstCame
                    }
                    guard first else { break }
                    while lock.withLock({ running && firstHeld }) { usleep(5_000) }
                default:
                    break
                }
                guard RawHTTP.send(upstream, Array(buffer[..<request.length])) else { break relaying }
                buffer.removeFirst(request.length)
            }
            let count = recv(client, &chunk, chunk.count, 0)
            if count <= 0 { break }
            record(chunk[0..<count], connection: connection)
            buffer += chunk[0..<count]
        }
        // Held: silent until the listener stops.
        if hold {
            while lock.withLock({ running }) { usleep(50_000) }
        }
        // This thread owns the upstream socket: it forgets it (so that stop() never shuts down
        // its number once the system has given it to another socket), ends the copy of answers,
        // and closes it.
        lock.withLock {
            open.removeAll { $0 == upstream }
            shutdown(upstream, Int32(SHUT_RDWR))
        }
        answersDone.wait()
        close(upstream)
    }

    /// The first whole request in `buffer`: its head (request line and headers) and its length
    /// with the body its `Content-Length` announces; `nil` until all of it has come.
    static func nextRequest(in buffer: [UInt8]) -> (head: String, length: Int)? {
        guard let end = buffer.firstRange(of: [13, 10, 13, 10]) else { return nil }
        let head = String(decoding: buffer[..<end.lowerBound], as: UTF8.self)
        let declared = head.split(separator: "\r\n").dropFirst().compactMap { line -> Int? in
            let parts = line.split(separator: ":", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "content-length" else { return nil }
            return Int(parts[1].trimmingCharacters(in: .whitespaces))
        }.first
        let length = end.upperBound + (declared ?? 0)
        return buffer.count >= length ? (head, length) : nil
    }
}
