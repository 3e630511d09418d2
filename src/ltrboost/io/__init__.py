"""Reading and writing ranking data: svmlight/LETOR text, LightGBM ``.query`` files."""

from ltrboost.io.letor import LetorData, dump_svmlight, load_svmlight, parse_docids
from ltrboost.io.queryfile import read_query_file, write_query_file

__all__ = [
    "LetorData",
    "dump_svmlight",
    "load_svmlight",
    "parse_docids",
    "read_query_file",
    "write_query_file",
]
