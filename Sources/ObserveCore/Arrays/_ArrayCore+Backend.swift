// Picks the C or Swift implementation of the array core for a backend.

extension ObservationBackend {
    var runEncoding: any _RunEncoding.Type {
        switch self {
        case .c: return _CRunEncoding.self
        case .swift: return _SwiftRunEncoding.self
        }
    }

    func makeBatchComposer(oldCount: Int) -> any _BatchComposing {
        switch self {
        case .c: return _CBatchComposer(oldCount: oldCount)
        case .swift: return _SwiftBatchComposer(oldCount: oldCount)
        }
    }

    func makePositionIndex(capacityHint: Int) -> any _PositionIndexing {
        switch self {
        case .c: return _CPositionIndex(capacityHint: capacityHint)
        case .swift: return _SwiftPositionIndex(capacityHint: capacityHint)
        }
    }
}
