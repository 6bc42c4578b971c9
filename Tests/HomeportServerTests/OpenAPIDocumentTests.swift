import Foundation
import HomeportServer
import HomeportTestSupport
import Testing

/// The operations of an OpenAPI document, as `METHOD /path` with `{name}` parameters, read from
/// its `paths:` block (two-space indentation, as docs/openapi.yaml is written).
func openAPIOperations(_ yaml: String) -> Set<String> {
    var operations: Set<String> = []
    var inPaths = false
    var path: String?
    for line in yaml.split(separator: "\n", omittingEmptySubsequences: false) {
        if !line.hasPrefix(" "), !line.hasPrefix("#"), !line.isEmpty {
            inPaths = line.hasPrefix("paths:")
            continue
        }
        guard inPaths else { continue }
        if line.hasPrefix("  /") || line.hasPrefix("  \"/") || line.hasPrefix("  '/") {
            path = line.trimmingCharacters(in: .whitespaces).dropLast().trimmingCharacters(
                in: CharacterSet(charactersIn: "\"'"))
        } else if line.hasPrefix("    "), !line.hasPrefix("     "), let path {
            let key = line.trimmingCharacters(in: .whitespaces)
            for method in ["get", "post", "put", "delete", "patch", "head", "options"] where key == method + ":" {
                operations.insert("\(method.uppercased()) \(path)")
            }
        }
    }
    return operations
}

@Suite("docs/openapi.yaml describes the server's JSON routes", .tags(.docs))
struct OpenAPIDocumentTests {
    /// The web door's HTML pages: not JSON, not in the document (docs/api.md lists them).
    static let htmlPrefix = "/account"

    @Test("every JSON route is in the document, and the document describes no route the server lacks")
    func routesMatchDocument() throws {
        let yaml = try String(contentsOfFile: repositoryFile("docs/openapi.yaml"), encoding: .utf8)
        #expect(yaml.contains("openapi: 3.1"), "an OpenAPI 3.1 document")
        let documented = openAPIOperations(yaml)
        try withAccounts(.sqlite) { server in
            let served = Set(
                server.application.routeTable.map { entry in
                    // `:name` parameters are `{name}` in OpenAPI.
                    entry.split(separator: " ").map { part in
                        part.split(separator: "/", omittingEmptySubsequences: false).map {
                            $0.hasPrefix(":") ? "{\($0.dropFirst())}" : String($0)
                        }.joined(separator: "/")
                    }.joined(separator: " ")
                })
            let json = served.filter { !$0.split(separator: " ")[1].hasPrefix(Self.htmlPrefix) }
            #expect(json.count > 20, "the route table was read: \(served.sorted())")
            #expect(
                json.subtracting(documented).isEmpty, "served, not documented: \(json.subtracting(documented).sorted())"
            )
            #expect(
                documented.subtracting(json).isEmpty,
                "documented, not served: \(documented.subtracting(json).sorted())")
        }
    }

    @Test("the reader of the document finds what it holds, and misses nothing it was given")
    func readerReadsPaths() {
        let yaml = """
            openapi: 3.1.0
            paths:
              /a:
                get:
                  summary: x
                post:
                  parameters:
                    - name: get
              "/b/{id}":
                delete:
                  responses: {}
            components:
              schemas:
                get:
                  type: object
            """
        #expect(openAPIOperations(yaml) == ["GET /a", "POST /a", "DELETE /b/{id}"])
    }
}
