import Foundation
import HomeportHTTP
import HomeportLogging
import HomeportTestSupport
import Testing

@Suite("The access log")
struct AccessLogTests {
    private func lines(_ log: MemoryLogSink) -> [String] {
        log.lines.joined().split(separator: "\n").map(String.init)
    }

    @Test("a server with a delay holds its access lines, and its stop writes every one, in order")
    func serverFlushesAtStop() throws {
        let log = MemoryLogSink()
        var configuration = HTTPServerConfiguration(port: 0, workerThreads: 2)
        configuration.accessLogDelay = .seconds(3600)
        let server = HTTPServer(
            configuration: configuration, responder: sampleRouter(), logger: Logger(label: "test", sink: log))
        try server.start()
        for path in ["/hello", "/users/1", "/users/2"] {
            #expect(try RawHTTP.request(port: server.port, path: path).status == 200)
        }
        _ = try RawHTTP.request(port: server.port, path: "/fail")
        #expect(!lines(log).contains { $0.contains("homeport.access") }, "held")
        #expect(lines(log).contains { $0.contains("handler failed") }, "every other line is written at once")
        server.shutdown()
        let access = lines(log).filter { $0.contains("homeport.access") }
        #expect(access.map { $0.split(separator: " ")[5] } == ["/hello", "/users/1", "/users/2", "/fail"])
    }
}
