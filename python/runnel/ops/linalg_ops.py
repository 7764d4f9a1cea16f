"""TF 1.x's linear-algebra functions (tf.matrix_inverse, tf.qr, tf.linalg.*)
over the C++ linalg op family (runnel/ops/linalg_ops.cc)."""

import collections

from runnel.framework import ops
from runnel.ops import gen_ops

QR = collections.namedtuple("Qr", ["q", "r"])
SLogDet = collections.namedtuple("LogMatrixDeterminant", ["sign", "log_abs_determinant"])


def matrix_inverse(input, adjoint=False, name=None):  # noqa: A002
    return gen_ops.matrix_inverse(input, adjoint=adjoint, name=name)


def matrix_determinant(input, name=None):  # noqa: A002
    return gen_ops.matrix_determinant(input, name=name)


def log_matrix_determinant(input, name=None):  # noqa: A002
    """(sign, log|det|) of each matrix (tf.linalg.slogdet)."""
    sign, log_abs = gen_ops.log_matrix_determinant(input, name=name)
    return SLogDet(sign, log_abs)


def logdet(matrix, name=None):
    """log(det(matrix)) of Hermitian positive definite matrices
    (tf.linalg.logdet)."""
    with ops.name_scope(name, "logdet", [matrix]):
        return gen_ops.log_matrix_determinant(matrix)[1]


def cholesky(input, name=None):  # noqa: A002
    return gen_ops.cholesky(input, name=name)


def matrix_solve(matrix, rhs, adjoint=False, name=None):
    return gen_ops.matrix_solve(matrix, rhs, adjoint=adjoint, name=name)


def matrix_triangular_solve(matrix, rhs, lower=True, adjoint=False, name=None):
    return gen_ops.matrix_triangular_solve(matrix, rhs, lower=lower, adjoint=adjoint,
                                           name=name)


def qr(input, full_matrices=False, name=None):  # noqa: A002
    """(q, r) with input = q r, q orthonormal, r upper triangular."""
    q, r = gen_ops.qr(input, full_matrices=full_matrices, name=name)
    return QR(q, r)


def exports():
    """TF 1.x's top-level names and the tf.linalg ones, with their functions."""
    top = {"matrix_inverse": matrix_inverse, "matrix_determinant": matrix_determinant,
           "log_matrix_determinant": log_matrix_determinant, "cholesky": cholesky,
           "matrix_solve": matrix_solve, "matrix_triangular_solve": matrix_triangular_solve,
           "qr": qr}
    linalg = {"inv": matrix_inverse, "det": matrix_determinant,
              "slogdet": log_matrix_determinant, "logdet": logdet, "cholesky": cholesky,
              "solve": matrix_solve, "triangular_solve": matrix_triangular_solve, "qr": qr,
              "matrix_inverse": matrix_inverse}
    return top, linalg

