// Fashion-MNIST with a convolutional network (NHWC):
//   conv 5x5x32 (SAME) -> ReLU -> max-pool 2x2 ->
//   conv 5x5x64 (SAME) -> ReLU -> max-pool 2x2 ->
//   dense 1024 -> ReLU -> dense 10, softmax cross-entropy.
//
//   build/examples/fashion_mnist_cnn                  # Adam, 3 epochs
//   build/examples/fashion_mnist_cnn --optimizer=momentum --learning_rate=0.01
//   build/tools/fashion_mnist_to_tfrecord --out_dir=/tmp/fm
//   build/examples/fashion_mnist_cnn --data=tfrecord --tfrecord_dir=/tmp/fm
//       --checkpoint_dir=/tmp/cnn  # queues + checkpoints; kill, rerun
//
// Prints a progress bar per epoch (step, mean loss, examples/s), then the
// test accuracy (about 91% after 3 epochs with the defaults) and the
// training time.
#include "examples/fashion_mnist_cnn_model.h"

using namespace runnel;  // NOLINT: an example reads better this way.

int main(int argc, char** argv) {
  examples::Flags flags;
  flags.epochs = 3;   // Also batch 64, Adam, lr 1e-3,
  flags.decay = 0.7;  // multiplied by 0.7 after each epoch.
  examples::ParseFlags(argc, argv, "fashion_mnist_cnn", &flags);

  Scope root = Scope::NewRootScope();
  examples::Classifier model;
  examples::MakeInputs(root, flags, TensorShape({28, 28, 1}), &model);
  examples::BuildCnn(root, &model);  // fashion_mnist_cnn_model.h
  // Training: the optimizer adds the gradients and the update ops.
  std::unique_ptr<training::Optimizer> optimizer;
  model.train_op = examples::BuildTrainOp(root, model.loss, flags,
                                          /*train_examples=*/60000, &optimizer,
                                          &model.grads);
  return examples::TrainAndEvaluate(root, model, flags);
}
