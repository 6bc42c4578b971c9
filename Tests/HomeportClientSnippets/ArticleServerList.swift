import HomeportClient

#if canImport(SwiftUI)
    import SwiftUI
#endif

struct ServerList: View {
    @State var model: HomeportModel
    var body: some View {
        List(model.servers, id: \.localID) { server in
            Text(server.label ?? server.primary.url)
        }
        .task { await model.follow() }
    }
}
