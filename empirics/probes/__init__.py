"""What is read off a model or its attention: per-query attention statistics, the query-key
eigenspectrum, the residual-stream lens, retrieval head metrics and the score Monte Carlo."""
