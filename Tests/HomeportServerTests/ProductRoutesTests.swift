import Foundation
import HomeportServer
import HomeportTesting
import Testing

/// How a product declares routes: groups, handlers answering an `Encodable` with a status, typed
/// path parameters.
@Suite("Product routes: groups, Encodable answers, typed statuses")
struct ProductRoutesTests {
    struct Shelf: Codable, Equatable {
        var id: Int64
        var owner: Int64
    }

    static let product = Product(name: "shelves", version: "1.0.0") { api in
        api.group("/shelves") { shelves in
            shelves.get { _, caller in [Shelf(id: 1, owner: caller.accountID)] }
            shelves.post(status: .created) { _, caller in Shelf(id: 2, owner: caller.accountID) }
            shelves.group("/:id") { shelf in
                shelf.get { request, caller in
                    Shelf(id: try request.parameter("id", as: Int64.self), owner: caller.accountID)
                }
                shelf.delete { _, _ in HTTPResponse(status: .noContent) }
                shelf.patch("/label", status: .accepted) { _, _ in ["label": "renamed"] }
            }
        }
        api.get("/teapot") { _, _ in throw HTTPError(status: 418, code: "teapot", message: "I am a teapot.") }
    }

    @Test("a group's routes sit under its prefix, nested groups under both; each answers its declared status")
    func groups() throws {
        try Self.product.test { app in
            let ada = try app.signUp("ada@example.com")
            let list = try app.get("/api/v1/shelves", as: ada)
            #expect(try list.status == 200 && list.json([Shelf].self) == [Shelf(id: 1, owner: ada.id)])
            #expect(list.headers["content-type"] == "application/json")
            let made = try app.post("/api/v1/shelves", as: ada)
            #expect(try made.status == 201 && made.json(Shelf.self) == Shelf(id: 2, owner: ada.id))
            #expect(try app.get("/api/v1/shelves/7", as: ada).json(Shelf.self) == Shelf(id: 7, owner: ada.id))
            #expect(try app.delete("/api/v1/shelves/7", as: ada).status == 204)
            let label = try app.patch("/api/v1/shelves/7/label", json: ["label": "x"], as: ada)
            #expect(label.status == 202 && label.text == #"{"label":"renamed"}"#)
            let teapot = try app.get("/api/v1/teapot", as: ada)
            #expect(teapot.status == 418 && teapot.errorCode == "teapot")
        }
    }

    @Test("a group's routes are signed-in like any: no token is 401, a bad parameter a 400 naming it")
    func rules() throws {
        try Self.product.test { app in
            #expect(try app.get("/api/v1/shelves").status == 401)
            #expect(try app.get("/api/v1/shelves/7").status == 401)
            let ada = try app.signUp("ada@example.com")
            let bad = try app.get("/api/v1/shelves/seven", as: ada)
            #expect(bad.status == 400 && bad.text.contains("'id'"))
            #expect(try app.get("/api/v1/shelves/7/nothing", as: ada).status == 404)
        }
    }

    @Test("a group whose prefix makes a bad path is refused when the server starts, naming the path")
    func badPrefix() throws {
        let broken = Product(name: "broken", version: "1.0.0") { api in
            api.group("/shelves/") { shelves in shelves.get { _, _ in ["a": 1] } }
        }
        #expect {
            try broken.test { _ in }
        } throws: { error in
            "\(error)".contains("/shelves/")
        }
        let homeports = Product(name: "clash", version: "1.0.0") { api in
            api.group("/push") { push in push.get("/mine") { _, _ in ["a": 1] } }
        }
        #expect {
            try homeports.test { _ in }
        } throws: { error in
            "\(error)".contains("/push/mine")
        }
    }

    @Test("HTTPStatus names the codes and is written as its number")
    func statuses() throws {
        #expect(HTTPStatus.created.rawValue == 201 && HTTPStatus.noContent.description == "204")
        #expect(HTTPResponse(status: .accepted).status == 202)
        #expect(try HTTPResponse.json(["a": 1], status: .created).status == 201)
        #expect(HTTPError(status: .conflict, code: "c", message: "m").response.status == 409)
        let literal: HTTPStatus = 418
        #expect(literal == HTTPStatus(rawValue: 418))
    }
}
