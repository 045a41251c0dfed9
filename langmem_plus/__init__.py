"""langmem_plus: a learning memory for LangGraph and LangChain agents."""
